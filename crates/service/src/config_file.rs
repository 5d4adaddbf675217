//! The serve config file (`fairflow serve --config FILE`): a TOML table whose
//! keys are serve's flags, turned into the command-line tokens those flags
//! would be. The caller hands in serve's flags as a `clap::Command`, so this
//! module knows no flag by name; it reads no file (the caller does, bounded
//! by [`MAX_CONFIG_BYTES`]). Every bad key or value is an error naming the
//! key and why; nothing here panics on input.

/// Why a serve config file's settings are not serve flags (each but the
/// TOML parser's names the key).
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// Not a TOML table.
    #[error("{0}")]
    Toml(#[from] toml::de::Error),
    /// A key that is not a flag of `serve`.
    #[error("unknown key `{key}` (the keys are serve's flags: {known})")]
    UnknownKey {
        /// The key.
        key: String,
        /// The keys there are, comma-separated.
        known: String,
    },
    /// A switch's value is not a boolean.
    #[error("key `{key}`: must be true or false")]
    NotBoolean {
        /// The key.
        key: String,
    },
    /// A value that is not a string or a number.
    #[error("key `{key}`: must be a string or a number")]
    NotScalar {
        /// The key.
        key: String,
    },
    /// A value the flag's own parser refuses.
    #[error("key `{key}`: {reason}")]
    BadValue {
        /// The key.
        key: String,
        /// The parser's reason.
        reason: String,
    },
}

/// The largest serve config file read.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// A serve config file's settings as serve flags: each key a flag of `serve`
/// by its long name (`_` or `-` between words; `config` itself excluded), a
/// string, number or boolean value (`true` gives a switch, `false` leaves it
/// off). Each value is checked by its flag's own parser, so a bad value is
/// named by its key.
pub fn config_tokens(text: &str, serve: &clap::Command) -> Result<Vec<String>, ConfigFileError> {
    let table: toml::Table = text.parse()?;
    let flags: Vec<&clap::Arg> = serve
        .get_arguments()
        .filter(|a| a.get_long().is_some_and(|l| l != "config"))
        .collect();
    let known = || {
        flags
            .iter()
            .filter_map(|a| a.get_long())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut tokens = Vec::new();
    for (key, value) in &table {
        let long = key.replace('_', "-");
        let Some(flag) = flags.iter().find(|a| a.get_long() == Some(long.as_str())) else {
            return Err(ConfigFileError::UnknownKey {
                key: key.clone(),
                known: known(),
            });
        };
        let switch = !flag.get_action().takes_values();
        match value {
            toml::Value::Boolean(on) if switch => {
                if *on {
                    tokens.push(format!("--{long}"));
                }
            }
            _ if switch => return Err(ConfigFileError::NotBoolean { key: key.clone() }),
            toml::Value::String(_) | toml::Value::Integer(_) | toml::Value::Float(_) => {
                let text = match value {
                    toml::Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                if let Some(reason) = flag_value_refusal(serve, flag, &text) {
                    return Err(ConfigFileError::BadValue {
                        key: key.clone(),
                        reason,
                    });
                }
                tokens.extend([format!("--{long}"), text]);
            }
            _ => return Err(ConfigFileError::NotScalar { key: key.clone() }),
        }
    }
    Ok(tokens)
}

/// Why `text` is not a value `flag` takes, by the flag's own parser (the
/// first line of its message), so a config file's bad value is named by its
/// key rather than by a flag the user never typed; `None` when it is one.
fn flag_value_refusal(command: &clap::Command, flag: &clap::Arg, text: &str) -> Option<String> {
    let long = format!("--{}", flag.get_long().unwrap_or_default());
    let parsed = command
        .clone()
        .try_get_matches_from(["serve", long.as_str(), text]);
    match parsed {
        // Only the value is judged here: a flag another one requires is
        // checked when the whole command line is parsed.
        Err(error)
            if matches!(
                error.kind(),
                clap::error::ErrorKind::InvalidValue | clap::error::ErrorKind::ValueValidation
            ) =>
        {
            let rendered = error.to_string();
            let first = rendered.lines().next().unwrap_or_default();
            Some(first.strip_prefix("error: ").unwrap_or(first).to_string())
        }
        _ => None,
    }
}
