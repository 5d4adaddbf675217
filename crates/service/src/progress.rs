//! Progress on standard error for work that takes a while (the service's
//! recovery, and the commands' replays, imports and one-off queries): an
//! `indicatif` bar, drawn only when standard error is a terminal and the work
//! is large enough to be worth watching; otherwise a hidden bar that costs
//! nothing. Scripts and logs never see it.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar over `total` units of `what` (`"events"`, `"records"`), shown only
/// on a terminal and when `total >= show_from`.
pub fn bar(total: u64, what: &str, message: &str, show_from: u64) -> ProgressBar {
    if total < show_from || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let template = format!(
        "{{msg}} [{{elapsed_precise}}] {{wide_bar}} {{human_pos}}/{{human_len}} {what} ({{per_sec}}, {{eta}} left)"
    );
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar.set_message(message.to_string());
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

/// A spinner for work of unknown size (reading a large file), on a terminal only.
pub fn spinner(message: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}] {human_pos}")
    {
        bar.set_style(style);
    }
    bar.set_message(message.to_string());
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}
