//! The one reading of a token file, for `serve --token-file` and for every
//! client command that sends the token (`--server`, `loadtest`): a regular
//! file of at most [`MAX_TOKEN_FILE_BYTES`] holding the token alone on one
//! line (a final newline allowed), at least [`MIN_TOKEN_CHARS`] visible ASCII
//! characters. A second line is an error rather than part of a token no
//! client could ever send.

use std::path::Path;

use fairflow_ingest::files::read_small_text;

/// The largest token file read.
pub const MAX_TOKEN_FILE_BYTES: u64 = 4096;

/// The shortest token accepted.
pub const MIN_TOKEN_CHARS: usize = 8;

/// The token held by the file at `path`.
pub fn read_token_file(path: &Path) -> anyhow::Result<String> {
    let text = read_small_text(path, MAX_TOKEN_FILE_BYTES)?;
    token_of(&text).map_err(|reason| anyhow::anyhow!("the token file {}: {reason}", path.display()))
}

/// The token in a token file's text, or why there is none.
fn token_of(text: &str) -> Result<String, String> {
    let body = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(text);
    if body.contains('\n') {
        let lines = body.split('\n').count();
        return Err(format!(
            "holds {lines} lines; it must hold the token alone on one line"
        ));
    }
    let token = body.trim();
    if let Some(bad) = token.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(format!(
            "the token holds {bad:?}; a token is visible ASCII characters without spaces"
        ));
    }
    if token.len() < MIN_TOKEN_CHARS {
        return Err(format!(
            "the token has {} characters, fewer than {MIN_TOKEN_CHARS}",
            token.len()
        ));
    }
    Ok(token.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_one_line_of_visible_characters() {
        assert_eq!(token_of("a-long-token\n").unwrap(), "a-long-token");
        assert_eq!(token_of("  a-long-token\r\n").unwrap(), "a-long-token");
        assert_eq!(token_of("a-long-token").unwrap(), "a-long-token");
        assert_eq!(
            token_of("a-long-token\nsecond-line\n").unwrap_err(),
            "holds 2 lines; it must hold the token alone on one line"
        );
        assert_eq!(
            token_of("a-long-token\n\n").unwrap_err(),
            "holds 2 lines; it must hold the token alone on one line"
        );
        assert_eq!(
            token_of("a long token\n").unwrap_err(),
            "the token holds ' '; a token is visible ASCII characters without spaces"
        );
        assert_eq!(
            token_of("short\n").unwrap_err(),
            "the token has 5 characters, fewer than 8"
        );
    }

    #[test]
    fn a_fifo_or_a_huge_file_is_refused_without_reading_it() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("token");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo (coreutils) makes a FIFO");
        let error = read_token_file(&fifo).unwrap_err().to_string();
        assert!(
            error.ends_with("token: is a FIFO, not a regular file"),
            "{error}"
        );
        let big = dir.path().join("big");
        std::fs::write(&big, "x".repeat(5000)).unwrap();
        let error = read_token_file(&big).unwrap_err().to_string();
        assert!(error.ends_with("big: is larger than 4096 bytes"), "{error}");
    }
}
