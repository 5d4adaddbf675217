//! `fairflow plot history`: quantities over time as line charts, one panel
//! per quantity (fair-share factor, usage, queue position), one line per
//! association, sharing the time axis (hours since the first sample). A
//! sample without a value (a user with no pending job has no position) breaks
//! the line there.

use fairflow_model::Time;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{drawing, utc_text, Picture, PlotError, FONT_FAMILY};

/// One line: a name and its values at the sampled times.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The legend's name.
    pub name: String,
    /// `(time, value)`, in time order; `None`: no value then.
    pub points: Vec<(Time, Option<f64>)>,
}

/// One chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// Its caption (the quantity and its unit).
    pub title: String,
    /// Its lines.
    pub series: Vec<Series>,
}

/// Several charts over one time axis.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPicture {
    /// The caption above the panels.
    pub caption: String,
    /// The panels, top to bottom.
    pub panels: Vec<Panel>,
    /// The picture's width in pixels.
    pub width_px: u32,
    /// Each panel's height in pixels.
    pub panel_height_px: u32,
}

/// The height of the caption, in pixels.
const TITLE_PX: u32 = 30;

impl HistoryPicture {
    /// The first and last sampled times of every panel.
    fn time_range(&self) -> Option<(Time, Time)> {
        let times = self
            .panels
            .iter()
            .flat_map(|p| &p.series)
            .flat_map(|s| s.points.iter().map(|(t, _)| *t));
        let (mut first, mut last) = (None::<Time>, None::<Time>);
        for t in times {
            first = Some(first.map_or(t, |f| f.min(t)));
            last = Some(last.map_or(t, |l| l.max(t)));
        }
        Some((first?, last?))
    }

    fn draw_panel<DB: DrawingBackend>(
        panel: &Panel,
        area: &DrawingArea<DB, Shift>,
        start: Time,
        hours: f64,
    ) -> Result<(), PlotError> {
        let values = panel
            .series
            .iter()
            .flat_map(|s| s.points.iter().filter_map(|(_, v)| *v));
        let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite()) {
            low = low.min(v);
            high = high.max(v);
        }
        if low > high {
            (low, high) = (0.0, 1.0);
        }
        let pad = if high > low {
            (high - low) * 0.05
        } else {
            low.abs().max(1.0) * 0.05
        };
        let mut chart = ChartBuilder::on(area)
            .caption(panel.title.as_str(), (FONT_FAMILY, 15.0))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..hours, (low - pad)..(high + pad))
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc(format!("hours since {}", utc_text(start)))
            .label_style((FONT_FAMILY, 12.0))
            .draw()
            .map_err(drawing)?;
        for (i, series) in panel.series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let mut segments: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for (t, v) in &series.points {
                match v.filter(|v| v.is_finite()) {
                    Some(v) => segments
                        .last_mut()
                        .expect("never empty")
                        .push(((t - start) as f64 / 3600.0, v)),
                    None if segments.last().is_some_and(|s| !s.is_empty()) => {
                        segments.push(Vec::new())
                    }
                    None => {}
                }
            }
            for (n, segment) in segments.into_iter().enumerate() {
                let drawn = chart
                    .draw_series(LineSeries::new(segment, color.stroke_width(2)))
                    .map_err(drawing)?;
                if n == 0 {
                    drawn.label(series.name.as_str()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                }
            }
        }
        chart
            .configure_series_labels()
            .label_font((FONT_FAMILY, 12.0))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(drawing)?;
        Ok(())
    }
}

impl Picture for HistoryPicture {
    fn size_px(&self) -> (u32, u32) {
        let panels = self.panels.len().max(1) as u32;
        (
            self.width_px,
            TITLE_PX + panels.saturating_mul(self.panel_height_px),
        )
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        let Some((start, end)) = self.time_range() else {
            return Err(PlotError::Invalid(
                "nothing to draw: no sampled time".to_string(),
            ));
        };
        area.fill(&WHITE).map_err(drawing)?;
        let (title, rest) = area.split_vertically(TITLE_PX);
        title
            .draw(&Text::new(
                self.caption.as_str(),
                (10, (TITLE_PX / 2) as i32),
                (FONT_FAMILY, 15.0)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(drawing)?;
        let hours = ((end - start) as f64 / 3600.0).max(1.0 / 60.0);
        let areas = rest.split_evenly((self.panels.len().max(1), 1));
        for (panel, area) in self.panels.iter().zip(&areas) {
            Self::draw_panel(panel, area, start, hours)?;
        }
        Ok(())
    }
}
