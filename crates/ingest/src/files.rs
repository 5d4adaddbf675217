//! The files a user names on the command line (a token, a config, a
//! database, a followed log): only regular files are opened, since a FIFO
//! blocks the start until someone writes to it and a device such as
//! `/dev/zero` never ends; and a file read whole is read only up to a bound,
//! so a mistaken path cannot exhaust memory.

use std::io::Read;
use std::path::Path;

use crate::IngestError;

/// What kind of file `meta` describes, for a message.
fn kind(meta: &std::fs::Metadata) -> &'static str {
    let file_type = meta.file_type();
    if file_type.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() || file_type.is_block_device() {
            return "a device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

fn not_regular(path: &Path, meta: &std::fs::Metadata) -> IngestError {
    IngestError::Format {
        path: path.display().to_string(),
        reason: format!("is {}, not a regular file", kind(meta)),
    }
}

/// The metadata of `path` (links followed) if it names a regular file; an
/// error naming the path and what it is otherwise.
pub fn require_regular_file(path: &Path) -> Result<std::fs::Metadata, IngestError> {
    let meta = std::fs::metadata(path).map_err(|source| IngestError::Io {
        path: path.display().to_string(),
        source,
    })?;
    if meta.is_file() {
        Ok(meta)
    } else {
        Err(not_regular(path, &meta))
    }
}

/// The whole text of the regular file `path`, refused when it is larger than
/// `max_bytes` or not UTF-8.
pub fn read_small_text(path: &Path, max_bytes: u64) -> Result<String, IngestError> {
    let io = |source| IngestError::Io {
        path: path.display().to_string(),
        source,
    };
    require_regular_file(path)?;
    let file = std::fs::File::open(path).map_err(io)?;
    // The path may have been replaced between the two looks: check what was
    // opened.
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(not_regular(path, &meta));
    }
    let mut bytes = Vec::new();
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(IngestError::Format {
            path: path.display().to_string(),
            reason: format!("is larger than {max_bytes} bytes"),
        });
    }
    String::from_utf8(bytes).map_err(|e| IngestError::Format {
        path: path.display().to_string(),
        reason: format!("is not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_up_to_the_bound_and_others_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.toml");
        std::fs::write(&file, "0123456789").unwrap();
        assert_eq!(read_small_text(&file, 10).unwrap(), "0123456789");
        let error = read_small_text(&file, 9).unwrap_err().to_string();
        assert!(error.ends_with("a.toml: is larger than 9 bytes"), "{error}");

        let error = read_small_text(dir.path(), 10).unwrap_err().to_string();
        assert!(
            error.ends_with("is a directory, not a regular file"),
            "{error}"
        );
        #[cfg(unix)]
        {
            let error = read_small_text(Path::new("/dev/zero"), 10)
                .unwrap_err()
                .to_string();
            assert_eq!(error, "/dev/zero: is a device, not a regular file");
            let fifo = dir.path().join("fifo");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            assert!(made.unwrap().success(), "mkfifo (coreutils) makes a FIFO");
            let error = read_small_text(&fifo, 10).unwrap_err().to_string();
            assert!(
                error.ends_with("fifo: is a FIFO, not a regular file"),
                "{error}"
            );
        }
        std::fs::write(&file, [0x66, 0xff]).unwrap();
        let error = read_small_text(&file, 10).unwrap_err().to_string();
        assert!(error.ends_with("is not UTF-8 text (byte 1)"), "{error}");
        assert!(read_small_text(&dir.path().join("missing"), 10).is_err());
    }
}
