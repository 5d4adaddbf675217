//! `fairflow man` and `fairflow completions SHELL`: the man page (roff, by
//! `clap_mangen`) and shell completions (by `clap_complete`), generated from
//! the same clap definitions that parse the command line, so they never
//! drift from it.
//!
//! ```sh
//! fairflow man > /usr/local/share/man/man1/fairflow.1
//! fairflow completions bash > /etc/bash_completion.d/fairflow
//! ```

use std::path::PathBuf;

use anyhow::Context;

/// `fairflow man` flags.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write one page per command (`fairflow.1`, `fairflow-sshare.1`, ...)
    /// into this directory instead of the main page to standard output.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// `fairflow completions` flags.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Print the man page, or write every command's page into `--dir`.
pub fn run_man(args: &ManArgs, command: clap::Command) -> anyhow::Result<()> {
    match &args.dir {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command).render(&mut page)?;
            crate::output::emit(&String::from_utf8_lossy(&page))
        }
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(command, dir)
                .with_context(|| format!("cannot write the pages into {}", dir.display()))
        }
    }
}

/// Print the completion script of `args.shell`.
pub fn run_completions(args: &CompletionsArgs, mut command: clap::Command) -> anyhow::Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "fairflow", &mut script);
    crate::output::emit(&String::from_utf8_lossy(&script))
}
