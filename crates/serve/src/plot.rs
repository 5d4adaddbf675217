//! Pictures of fairflow's answers, drawn with `plotters` into SVG text or PNG
//! bytes: `tree` (the fair-share tree as an icicle), `history` (line
//! charts of fair-share factor, usage and queue position over a replay) and
//! `whatif` (bars of what a proposal changes).
//!
//! A picture is a value implementing [`Picture`] (its size and how it draws
//! itself on any `plotters` backend); [`svg`] and [`png`] render one. Text
//! is laid out and, in PNG, drawn with DejaVu Sans, embedded in the binary
//! (the `dejavu` crate; the fonts' licence is Bitstream Vera's, free to
//! embed and redistribute), so nothing is needed at run time.

use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

pub mod history;
pub mod tree;
pub mod whatif;

/// The font family every picture's text uses (registered from DejaVu Sans).
pub const FONT_FAMILY: &str = "sans-serif";

/// Why a picture could not be drawn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlotError {
    /// The embedded font could not be read.
    #[error("the embedded font could not be registered")]
    Font,
    /// `plotters` failed to draw.
    #[error("drawing failed: {0}")]
    Draw(String),
    /// The PNG encoder failed.
    #[error("PNG encoding failed: {0}")]
    Png(String),
    /// The asked picture cannot be drawn (no data, a bad size).
    #[error("{0}")]
    Invalid(String),
}

/// Which file format a picture is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// SVG text.
    Svg,
    /// PNG bytes.
    Png,
}

impl ImageFormat {
    /// The format a file name asks for by its extension (`.svg`, `.png`, in
    /// any case); `None` for anything else.
    pub fn from_path(path: &str) -> Option<ImageFormat> {
        let lower = path.to_ascii_lowercase();
        if lower.ends_with(".svg") {
            Some(ImageFormat::Svg)
        } else if lower.ends_with(".png") {
            Some(ImageFormat::Png)
        } else {
            None
        }
    }
}

/// Something that can be drawn.
pub trait Picture {
    /// Its size in pixels, `(width, height)`.
    fn size_px(&self) -> (u32, u32);
    /// Draw it on `area` (of [`Picture::size_px`]).
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), PlotError>;
}

/// A `plotters` error as a [`PlotError`].
pub(crate) fn drawing<E: std::error::Error + Send + Sync>(
    error: DrawingAreaErrorKind<E>,
) -> PlotError {
    PlotError::Draw(error.to_string())
}

/// Register the embedded font once (every text `plotters` lays out needs it).
pub fn register_font() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, dejavu::sans::regular())
            .is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(PlotError::Font)
    }
}

fn check_size(picture: &impl Picture) -> Result<(u32, u32), PlotError> {
    let (width, height) = picture.size_px();
    const MAX_SIDE_PX: u32 = 20_000;
    if width == 0 || height == 0 || width > MAX_SIDE_PX || height > MAX_SIDE_PX {
        return Err(PlotError::Invalid(format!(
            "a picture of {width} x {height} pixels: each side is 1 to {MAX_SIDE_PX}"
        )));
    }
    Ok((width, height))
}

/// The picture as SVG text.
pub fn svg(picture: &impl Picture) -> Result<String, PlotError> {
    register_font()?;
    let size = check_size(picture)?;
    let mut text = String::new();
    {
        let area = SVGBackend::with_string(&mut text, size).into_drawing_area();
        picture.draw(&area)?;
        area.present().map_err(drawing)?;
    }
    Ok(text)
}

/// The picture as PNG bytes (8-bit RGB).
pub fn png(picture: &impl Picture) -> Result<Vec<u8>, PlotError> {
    register_font()?;
    let (width, height) = check_size(picture)?;
    let mut pixels = vec![255u8; width as usize * height as usize * 3];
    {
        let area = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        picture.draw(&area)?;
        area.present().map_err(drawing)?;
    }
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, width, height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder
            .write_header()
            .map_err(|e| PlotError::Png(e.to_string()))?;
        writer
            .write_image_data(&pixels)
            .map_err(|e| PlotError::Png(e.to_string()))?;
    }
    Ok(bytes)
}

/// The picture in `format`.
pub fn render(picture: &impl Picture, format: ImageFormat) -> Result<Vec<u8>, PlotError> {
    match format {
        ImageFormat::Svg => svg(picture).map(String::into_bytes),
        ImageFormat::Png => png(picture),
    }
}

/// The colour a fraction `t` (0 to 1) of the way along `stops` (equally
/// spaced colours), blended linearly between the two stops around it.
pub(crate) fn blend(stops: &[(u8, u8, u8)], t: f64) -> RGBColor {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let last = stops.len() - 1;
    let at = t * last as f64;
    let i = (at.floor() as usize).min(last.saturating_sub(1));
    let f = at - i as f64;
    let (a, b) = (stops[i], stops[(i + 1).min(last)]);
    let mix = |x: u8, y: u8| (x as f64 + (y as f64 - x as f64) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Black or white, whichever reads better on `background`.
pub(crate) fn ink_on(background: RGBColor) -> RGBColor {
    let luma =
        0.299 * background.0 as f64 + 0.587 * background.1 as f64 + 0.114 * background.2 as f64;
    if luma > 140.0 {
        BLACK
    } else {
        WHITE
    }
}

/// `t` (Unix seconds) as UTC text for a caption.
pub(crate) fn utc_text(t: i64) -> String {
    match chrono::DateTime::from_timestamp(t, 0) {
        Some(when) => when.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        None => format!("t={t}"),
    }
}

/// The width in pixels of `text` at `size_px` in the embedded font
/// (`None`: it cannot be laid out).
pub(crate) fn text_width_px(text: &str, size_px: f64) -> Option<u32> {
    let font = (FONT_FAMILY, size_px).into_font();
    font.box_size(text).ok().map(|(w, _)| w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_come_from_the_extension() {
        assert_eq!(ImageFormat::from_path("a/b.SVG"), Some(ImageFormat::Svg));
        assert_eq!(ImageFormat::from_path("tree.png"), Some(ImageFormat::Png));
        assert_eq!(ImageFormat::from_path("tree.pdf"), None);
    }

    #[test]
    fn blends_between_stops() {
        let stops = [(0, 0, 0), (200, 100, 50)];
        assert_eq!(blend(&stops, 0.0), RGBColor(0, 0, 0));
        assert_eq!(blend(&stops, 1.0), RGBColor(200, 100, 50));
        assert_eq!(blend(&stops, 0.5), RGBColor(100, 50, 25));
        assert_eq!(blend(&stops, 7.0), RGBColor(200, 100, 50));
        assert_eq!(blend(&stops, f64::NAN), RGBColor(0, 0, 0));
    }

    #[test]
    fn captions_in_utc() {
        // 1700000000 s after the epoch is 2023-11-14 22:13:20 UTC.
        assert_eq!(utc_text(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }
}
