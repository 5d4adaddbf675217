//! The what-if picture (`fairflow whatif -o FILE.svg|png`): two panels of
//! horizontal bars, the `k` user associations whose fair-share factor
//! changes most (a bar from the zero line to the change, green for a rise,
//! red for a fall) and the `k` jobs that move most in the queue (places
//! gained, green up the queue, red down; a job entering or leaving the
//! queue has no bar and says so), each labelled with its name and change.

use fairflow_model::report::whatif::WhatIf;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{drawing, Picture, PlotError, FONT_FAMILY};

/// Height of one bar's row, pixels.
pub const ROW_PX: u32 = 22;
/// Height of the title and of each panel's heading, pixels.
pub const HEADING_PX: u32 = 30;
/// Width of the label column left of the bars, pixels.
pub const LABEL_PX: u32 = 360;
/// The colour of a rise (a higher factor, places gained).
pub const RISE: RGBColor = RGBColor(46, 139, 87);
/// The colour of a fall.
pub const FALL: RGBColor = RGBColor(200, 60, 50);

/// One bar: its label, its signed value (`None`: no bar) and the text of
/// the value.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// What the row is (`account/user`, `job 12 (user)`).
    pub label: String,
    /// The signed change the bar's length shows.
    pub value: Option<f64>,
    /// The change as written next to the bar.
    pub text: String,
}

/// The what-if answer as a picture.
#[derive(Debug, Clone, PartialEq)]
pub struct WhatIfPicture {
    /// The picture's width, pixels.
    pub width_px: u32,
    caption: String,
    associations: Vec<Bar>,
    jobs: Vec<Bar>,
}

impl WhatIfPicture {
    /// The first `k` of each list of `answer` (already ranked by impact).
    pub fn new(answer: &WhatIf, k: usize, width_px: u32) -> WhatIfPicture {
        let associations = answer
            .associations
            .iter()
            .take(k)
            .map(|a| Bar {
                label: format!("{}/{}", a.account, a.user),
                value: Some(a.change()),
                text: format!("{:+.6}", a.change()),
            })
            .collect();
        let jobs = answer
            .jobs
            .iter()
            .take(k)
            .map(|j| match j.places_gained() {
                Some(places) => Bar {
                    label: format!("job {} ({})", j.job, j.user),
                    value: Some(places as f64),
                    text: format!("{places:+} places, priority {:+}", j.priority_change()),
                },
                None => Bar {
                    label: format!("job {} ({})", j.job, j.user),
                    value: None,
                    text: match (j.position_before, j.position_after) {
                        (None, Some(after)) => format!("enters the queue at {after}"),
                        (Some(before), None) => format!("leaves the queue (was {before})"),
                        _ => "not ranked".to_string(),
                    },
                },
            })
            .collect();
        WhatIfPicture {
            width_px,
            caption: format!(
                "What if, at t={} ({} proposed events): {} associations and {} jobs change",
                answer.at,
                answer.applied,
                answer.associations.len(),
                answer.jobs.len()
            ),
            associations,
            jobs,
        }
    }

    /// The association bars, in drawing order.
    pub fn association_bars(&self) -> &[Bar] {
        &self.associations
    }

    /// The job bars, in drawing order.
    pub fn job_bars(&self) -> &[Bar] {
        &self.jobs
    }

    /// Pixels from the bars' zero line to the end of a bar of `value` in a
    /// panel whose largest magnitude is `largest` (half the bar area each
    /// side).
    pub fn bar_length_px(&self, value: f64, largest: f64) -> i32 {
        let half = self.bar_area_px() as f64 / 2.0;
        if largest <= 0.0 {
            return 0;
        }
        (value / largest * half).round() as i32
    }

    /// The width of the bars' area (right of the labels, left of the value
    /// text), pixels.
    pub fn bar_area_px(&self) -> u32 {
        self.width_px.saturating_sub(LABEL_PX + 200).max(40)
    }

    fn panel_height(bars: &[Bar]) -> u32 {
        HEADING_PX + ROW_PX * (bars.len().max(1) as u32)
    }

    fn draw_panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        heading: &str,
        bars: &[Bar],
    ) -> Result<(), PlotError> {
        let font = (FONT_FAMILY, 13.0).into_font().color(&BLACK);
        let left = |text: &str, x: i32, y: i32| {
            Text::new(
                text.to_string(),
                (x, y),
                font.clone().pos(Pos::new(HPos::Left, VPos::Center)),
            )
        };
        area.draw(&Text::new(
            heading.to_string(),
            (10, (HEADING_PX / 2) as i32),
            (FONT_FAMILY, 14.0)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(drawing)?;
        if bars.is_empty() {
            area.draw(&left(
                "nothing changes",
                10,
                (HEADING_PX + ROW_PX / 2) as i32,
            ))
            .map_err(drawing)?;
            return Ok(());
        }
        let largest = bars
            .iter()
            .filter_map(|bar| bar.value)
            .fold(0.0f64, |m, v| m.max(v.abs()));
        let zero_x = (LABEL_PX + self.bar_area_px() / 2) as i32;
        let text_x = (LABEL_PX + self.bar_area_px() + 10) as i32;
        for (row, bar) in bars.iter().enumerate() {
            let top = (HEADING_PX + ROW_PX * row as u32) as i32;
            let middle = top + (ROW_PX / 2) as i32;
            area.draw(&left(&bar.label, 10, middle)).map_err(drawing)?;
            if let Some(value) = bar.value {
                let length = self.bar_length_px(value, largest);
                let (x0, x1) = if length >= 0 {
                    (zero_x, zero_x + length)
                } else {
                    (zero_x + length, zero_x)
                };
                let color = if value >= 0.0 { RISE } else { FALL };
                area.draw(&Rectangle::new(
                    [(x0, top + 3), (x1.max(x0 + 1), top + ROW_PX as i32 - 3)],
                    color.filled(),
                ))
                .map_err(drawing)?;
            }
            area.draw(&left(&bar.text, text_x, middle))
                .map_err(drawing)?;
        }
        let bottom = (HEADING_PX + ROW_PX * bars.len() as u32) as i32;
        area.draw(&PathElement::new(
            vec![(zero_x, HEADING_PX as i32), (zero_x, bottom)],
            BLACK,
        ))
        .map_err(drawing)?;
        Ok(())
    }
}

impl Picture for WhatIfPicture {
    fn size_px(&self) -> (u32, u32) {
        (
            self.width_px,
            HEADING_PX + Self::panel_height(&self.associations) + Self::panel_height(&self.jobs),
        )
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        area.fill(&WHITE).map_err(drawing)?;
        let (title, rest) = area.split_vertically(HEADING_PX);
        title
            .draw(&Text::new(
                self.caption.clone(),
                (10, (HEADING_PX / 2) as i32),
                (FONT_FAMILY, 15.0)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(drawing)?;
        let (top, bottom) = rest.split_vertically(Self::panel_height(&self.associations));
        self.draw_panel(
            &top,
            "Fair-share factor change per user association",
            &self.associations,
        )?;
        self.draw_panel(&bottom, "Places moved in the queue per job", &self.jobs)
    }
}

#[cfg(test)]
mod tests {
    use fairflow_model::report::whatif::{AssocChange, JobChange};

    use super::*;
    use crate::plot::svg;

    fn answer() -> WhatIf {
        WhatIf {
            at: 100,
            applied: 2,
            associations: vec![
                AssocChange {
                    account: "a".into(),
                    user: "alice".into(),
                    before: Some(0.25),
                    after: Some(0.75),
                },
                AssocChange {
                    account: "b".into(),
                    user: "bob".into(),
                    before: Some(0.5),
                    after: Some(0.25),
                },
            ],
            jobs: vec![
                JobChange {
                    job: "7".into(),
                    user: "alice".into(),
                    account: "a".into(),
                    priority_before: Some(100),
                    priority_after: Some(600),
                    position_before: Some(5),
                    position_after: Some(1),
                },
                JobChange {
                    job: "9".into(),
                    user: "bob".into(),
                    account: "b".into(),
                    priority_before: None,
                    priority_after: Some(50),
                    position_before: None,
                    position_after: Some(6),
                },
            ],
        }
    }

    /// By hand: the association changes are +0.5 and -0.25, so alice's bar
    /// is the full half of the bar area right of the zero line and bob's
    /// half of that, left of it; job 7 gained 5 - 1 = 4 places (the
    /// largest: a full half), job 9 enters the queue (no bar).
    #[test]
    fn bars_are_signed_and_proportional_to_the_changes() {
        let picture = WhatIfPicture::new(&answer(), 10, 1000);
        let half = picture.bar_area_px() as i32 / 2;
        assert_eq!(picture.bar_area_px(), 1000 - LABEL_PX - 200);
        assert_eq!(picture.bar_length_px(0.5, 0.5), half);
        assert_eq!(picture.bar_length_px(-0.25, 0.5), -half / 2);
        let jobs = picture.job_bars();
        assert_eq!(jobs[0].value, Some(4.0));
        assert_eq!(jobs[0].text, "+4 places, priority +500");
        assert_eq!(jobs[1].value, None);
        assert_eq!(jobs[1].text, "enters the queue at 6");
        assert_eq!(picture.association_bars()[1].text, "-0.250000");
        // Two panels of two rows under the title.
        assert_eq!(picture.size_px(), (1000, 3 * HEADING_PX + 4 * ROW_PX));

        let text = svg(&picture).unwrap();
        for label in [
            "a/alice",
            "b/bob",
            "job 7 (alice)",
            "job 9 (bob)",
            "+0.500000",
            "-0.250000",
        ] {
            assert!(text.contains(label), "{label} missing");
        }
        // Three bars (job 9 has none): a rise green, a fall red.
        let lower = text.to_ascii_lowercase();
        let rise = format!("#{:02x}{:02x}{:02x}", RISE.0, RISE.1, RISE.2);
        let fall = format!("#{:02x}{:02x}{:02x}", FALL.0, FALL.1, FALL.2);
        assert_eq!(lower.matches(&rise).count(), 2, "{text}");
        assert_eq!(lower.matches(&fall).count(), 1, "{text}");
    }

    #[test]
    fn nothing_changing_says_so() {
        let mut empty = answer();
        empty.associations.clear();
        empty.jobs.clear();
        let text = svg(&WhatIfPicture::new(&empty, 10, 800)).unwrap();
        assert_eq!(text.matches("nothing changes").count(), 2);
    }
}
