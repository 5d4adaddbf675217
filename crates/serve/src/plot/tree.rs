//! `fairflow plot tree` and `GET /v1/plot/tree.svg`: the fair-share tree as
//! an icicle. One row per depth (`root` on top); each association's box is
//! its parent's box divided among the siblings by their shares (a sibling
//! group whose shares are all 0 is divided equally), so its width is its
//! normalised shares of the whole cluster. Its colour is, by
//! [`TreeColor`], either its usage against its shares — its share of the
//! cluster's raw usage over its share of the width, on a diverging scale
//! from a quarter (blue, under-served) through 1 (pale) to four times (red,
//! over-served) — or its fair-share factor (red 0, yellow 0.5, green 1;
//! grey where the table has none). A box is labelled (the account, or the
//! user of a user association) when the label fits.
//!
//! Readable from 10 to 100,000 associations: the children of a box that
//! would be narrower than `min_width_px` are drawn as one box per parent,
//! labelled "N others" (coloured by their summed usage against their summed
//! shares; "+N" where that label does not fit), and their subtrees are not
//! drawn; a single narrow child is drawn
//! alone, without its subtree. At most [`MAX_ROWS`] depths are drawn.

use fairflow_model::report::{FairshareRow, FairshareTable};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{blend, drawing, ink_on, text_width_px, utc_text, Picture, PlotError, FONT_FAMILY};
use crate::audit::parents;

/// The picture's margin on every side, in pixels.
pub const MARGIN_PX: u32 = 10;
/// The height of the caption above the rows, in pixels.
pub const TITLE_PX: u32 = 30;
/// The height of one row (one depth of the tree), in pixels.
pub const ROW_PX: u32 = 30;
/// The height of the legend below the rows, in pixels.
pub const LEGEND_PX: u32 = 50;
/// The most depths drawn.
pub const MAX_ROWS: usize = 40;
/// The size of labels, in pixels.
const LABEL_PX: f64 = 13.0;

/// What a box's colour shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TreeColor {
    /// Its usage against its shares (over- and under-served).
    #[default]
    Usage,
    /// Its fair-share factor.
    Factor,
}

impl TreeColor {
    /// `usage` or `factor`, as the command line and the service name it.
    pub fn parse(name: &str) -> Option<TreeColor> {
        match name {
            "usage" => Some(TreeColor::Usage),
            "factor" => Some(TreeColor::Factor),
            _ => None,
        }
    }

    /// Its name (`usage`, `factor`).
    pub fn name(self) -> &'static str {
        match self {
            TreeColor::Usage => "usage",
            TreeColor::Factor => "factor",
        }
    }
}

/// How the tree is drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeOptions {
    /// What colour shows.
    pub color: TreeColor,
    /// Children narrower than this many pixels are drawn as one "N others" box.
    pub min_width_px: f64,
    /// The picture's width in pixels.
    pub width_px: u32,
}

impl Default for TreeOptions {
    fn default() -> Self {
        TreeOptions {
            color: TreeColor::Usage,
            min_width_px: 4.0,
            width_px: 1200,
        }
    }
}

/// One box of the icicle.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeBox {
    /// Its label: the account, the user of a user association, or "N others".
    pub label: String,
    /// The account (for a user association, its account; for an "others"
    /// box, the parent's).
    pub account: String,
    /// The user, for a user association.
    pub user: Option<String>,
    /// Its depth (`root` 0), which is its row.
    pub depth: usize,
    /// Its left edge, in pixels from the picture's left.
    pub x0_px: f64,
    /// Its right edge, in pixels from the picture's left.
    pub x1_px: f64,
    /// How many associations it aggregates: 0 for one association's box,
    /// N for an "N others" box.
    pub others: usize,
    /// Its share of the cluster's raw usage over its share of the width
    /// (`None` when the cluster has no usage, or it has neither usage nor
    /// width).
    pub usage_ratio: Option<f64>,
    /// Its fair-share factor (`None` for an "others" box or where the table
    /// has none).
    pub factor: Option<f64>,
}

/// The icicle of one fair-share table, laid out.
#[derive(Debug, Clone, PartialEq)]
pub struct TreePicture {
    caption: String,
    options: TreeOptions,
    boxes: Vec<TreeBox>,
    rows: usize,
}

/// The usage ratio at which the diverging scale saturates (and its inverse).
const SATURATION_RATIO: f64 = 4.0;
/// ColorBrewer's RdBu, blue (under-served) to red (over-served).
const DIVERGING: [(u8, u8, u8); 5] = [
    (33, 102, 172),
    (146, 197, 222),
    (247, 247, 247),
    (244, 165, 130),
    (178, 24, 43),
];
/// ColorBrewer's RdYlGn, red (factor 0) to green (factor 1).
const SEQUENTIAL: [(u8, u8, u8); 3] = [(215, 48, 39), (255, 255, 191), (26, 152, 80)];
/// Boxes without a value.
const NO_VALUE: RGBColor = RGBColor(200, 200, 200);

/// The colour of a usage ratio: its base-4 logarithm from −1 to 1 along
/// [`DIVERGING`].
pub fn usage_color(ratio: Option<f64>) -> RGBColor {
    match ratio {
        None => NO_VALUE,
        Some(r) => {
            let position = if r <= 0.0 {
                -1.0
            } else {
                (r.ln() / SATURATION_RATIO.ln()).clamp(-1.0, 1.0)
            };
            blend(&DIVERGING, (position + 1.0) / 2.0)
        }
    }
}

/// The colour of a fair-share factor along [`SEQUENTIAL`].
pub fn factor_color(factor: Option<f64>) -> RGBColor {
    factor.map_or(NO_VALUE, |f| blend(&SEQUENTIAL, f))
}

/// What laying out one table reads: its rows (tree order), each row's
/// children, the cluster's raw usage and the width the rows share.
struct Layout<'t> {
    rows: &'t [FairshareRow],
    children: Vec<Vec<usize>>,
    root_usage: u64,
    inner_px: f64,
    min_width_px: f64,
}

/// A box to place: its row, left edge and width in pixels, and whether its
/// children are drawn.
type Placement = (usize, f64, f64, bool);

impl Layout<'_> {
    /// A box's share of the cluster's raw usage (`usage`) over its share of
    /// the width (`width_px`).
    fn ratio(&self, usage: u64, width_px: f64) -> Option<f64> {
        if self.root_usage == 0 {
            return None;
        }
        let usage_share = usage as f64 / self.root_usage as f64;
        let width_share = width_px / self.inner_px;
        if width_share > 0.0 {
            Some(usage_share / width_share)
        } else if usage_share > 0.0 {
            Some(f64::INFINITY)
        } else {
            None
        }
    }

    /// The boxes, depth first (each parent before its children, siblings
    /// left to right).
    fn boxes(&self) -> Vec<TreeBox> {
        let mut boxes = Vec::new();
        let mut stack: Vec<Placement> = Vec::new();
        if !self.rows.is_empty() {
            stack.push((0, MARGIN_PX as f64, self.inner_px, true));
        }
        while let Some((i, x0, width, descend)) = stack.pop() {
            let row = &self.rows[i];
            boxes.push(TreeBox {
                label: row.user.clone().unwrap_or_else(|| row.account.clone()),
                account: row.account.clone(),
                user: row.user.clone(),
                depth: row.depth,
                x0_px: x0,
                x1_px: x0 + width,
                others: 0,
                usage_ratio: self.ratio(row.raw_usage, width),
                factor: row.fairshare,
            });
            if !descend || row.depth + 1 >= MAX_ROWS || self.children[i].is_empty() {
                continue;
            }
            let placed = self.place_children(i, x0, width, &mut boxes);
            // Depth first, left to right.
            stack.extend(placed.into_iter().rev());
        }
        boxes
    }

    /// Row `i`'s box (from `x0`, `width` wide) divided among its children by
    /// their shares (equally when all are 0): those at least `min_width_px`
    /// wide placed left to right, then a single narrow one alone (without
    /// its subtree), or several narrow ones as one "N others" box pushed to
    /// `boxes`.
    fn place_children(
        &self,
        i: usize,
        x0: f64,
        width: f64,
        boxes: &mut Vec<TreeBox>,
    ) -> Vec<Placement> {
        let rows = self.rows;
        let children = &self.children[i];
        let weight = |c: usize| rows[c].raw_shares.map_or(0, |s| s.raw()) as f64;
        let total: f64 = children.iter().map(|&c| weight(c)).sum();
        let count = children.len() as f64;
        let widths: Vec<(usize, f64)> = children
            .iter()
            .map(|&c| {
                let part = if total > 0.0 {
                    weight(c) / total
                } else {
                    1.0 / count
                };
                (c, width * part)
            })
            .collect();
        let (wide, narrow): (Vec<_>, Vec<_>) =
            widths.iter().partition(|(_, w)| *w >= self.min_width_px);
        let mut at = x0;
        let mut placed = Vec::new();
        for &(c, w) in &wide {
            placed.push((c, at, w, true));
            at += w;
        }
        match narrow.as_slice() {
            [] => {}
            [(c, w)] => placed.push((*c, at, *w, false)),
            many => {
                let w: f64 = many.iter().map(|(_, w)| w).sum();
                let usage: u64 = many.iter().map(|(c, _)| rows[*c].raw_usage).sum();
                boxes.push(TreeBox {
                    label: format!("{} others", many.len()),
                    account: rows[i].account.clone(),
                    user: None,
                    depth: rows[i].depth + 1,
                    x0_px: at,
                    x1_px: at + w,
                    others: many.len(),
                    usage_ratio: self.ratio(usage, w),
                    factor: None,
                });
            }
        }
        placed
    }
}

impl TreePicture {
    /// Lay out `table` (in tree order, `root` first).
    pub fn new(table: &FairshareTable, options: &TreeOptions) -> TreePicture {
        let rows = &table.rows;
        let parent = parents(rows);
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); rows.len()];
        for (i, p) in parent.iter().enumerate() {
            if let Some(p) = p {
                children[*p].push(i);
            }
        }
        let layout = Layout {
            rows,
            children,
            root_usage: rows.first().map_or(0, |r| r.raw_usage),
            inner_px: options.width_px.saturating_sub(2 * MARGIN_PX) as f64,
            min_width_px: options.min_width_px,
        };
        let boxes = layout.boxes();
        let depth_rows = boxes.iter().map(|b| b.depth + 1).max().unwrap_or(1);
        let shown = match options.color {
            TreeColor::Usage => "colour: usage ÷ shares",
            TreeColor::Factor => "colour: fair-share factor",
        };
        let caption = format!(
            "Fair-share tree · {} · {} associations · {} · width: normalised shares · {shown}",
            table.algorithm.name(),
            rows.len(),
            utc_text(table.as_of),
        );
        TreePicture {
            caption,
            options: options.clone(),
            boxes,
            rows: depth_rows,
        }
    }

    /// The boxes, depth first (each parent before its children).
    pub fn boxes(&self) -> &[TreeBox] {
        &self.boxes
    }

    /// The top of the row of `depth`, in pixels.
    pub fn row_top_px(depth: usize) -> u32 {
        MARGIN_PX + TITLE_PX + depth as u32 * ROW_PX
    }

    /// A box's fill.
    pub fn fill(&self, b: &TreeBox) -> RGBColor {
        match self.options.color {
            TreeColor::Usage => usage_color(b.usage_ratio),
            TreeColor::Factor if b.others > 0 => NO_VALUE,
            TreeColor::Factor => factor_color(b.factor),
        }
    }

    fn draw_legend<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        top: i32,
    ) -> Result<(), PlotError> {
        const STEPS: i32 = 40;
        const STEP_PX: i32 = 12;
        let left = MARGIN_PX as i32;
        let font = (FONT_FAMILY, 12.0).into_font().color(&BLACK);
        for s in 0..STEPS {
            let t = s as f64 / (STEPS - 1) as f64;
            let color = match self.options.color {
                TreeColor::Usage => usage_color(Some(SATURATION_RATIO.powf(2.0 * t - 1.0))),
                TreeColor::Factor => factor_color(Some(t)),
            };
            let x = left + s * STEP_PX;
            area.draw(&Rectangle::new(
                [(x, top), (x + STEP_PX, top + 14)],
                color.filled(),
            ))
            .map_err(drawing)?;
        }
        let (low, middle, high) = match self.options.color {
            TreeColor::Usage => ("¼×: under-served", "usage = shares", "4×: over-served"),
            TreeColor::Factor => ("factor 0", "0.5", "1"),
        };
        let below = top + 18;
        let end = left + STEPS * STEP_PX;
        let anchored = |h| font.pos(Pos::new(h, VPos::Top));
        area.draw(&Text::new(low, (left, below), anchored(HPos::Left)))
            .map_err(drawing)?;
        area.draw(&Text::new(
            middle,
            ((left + end) / 2, below),
            anchored(HPos::Center),
        ))
        .map_err(drawing)?;
        area.draw(&Text::new(high, (end, below), anchored(HPos::Right)))
            .map_err(drawing)?;
        Ok(())
    }
}

impl Picture for TreePicture {
    fn size_px(&self) -> (u32, u32) {
        let height = MARGIN_PX * 2 + TITLE_PX + self.rows as u32 * ROW_PX + LEGEND_PX;
        (self.options.width_px, height)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        area.fill(&WHITE).map_err(drawing)?;
        let caption = (FONT_FAMILY, 15.0)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(
            self.caption.as_str(),
            (MARGIN_PX as i32, (MARGIN_PX + TITLE_PX / 2) as i32),
            caption,
        ))
        .map_err(drawing)?;
        for b in &self.boxes {
            let (x0, x1) = (b.x0_px.round() as i32, b.x1_px.round() as i32);
            let top = Self::row_top_px(b.depth) as i32;
            // A pixel of white between neighbours and between rows.
            let right = if x1 - x0 >= 3 { x1 - 1 } else { x1 };
            let bottom = top + ROW_PX as i32 - 1;
            let fill = self.fill(b);
            area.draw(&Rectangle::new([(x0, top), (right, bottom)], fill.filled()))
                .map_err(drawing)?;
            if (b.x1_px - b.x0_px) < 20.0 {
                continue;
            }
            // An "N others" box too narrow for its label shows "+N".
            let short = (b.others > 0).then(|| format!("+{}", b.others));
            let fitting = std::iter::once(&b.label).chain(&short).find(|label| {
                text_width_px(label, LABEL_PX)
                    .is_some_and(|w| (w as f64) + 6.0 <= b.x1_px - b.x0_px)
            });
            if let Some(label) = fitting {
                let style = (FONT_FAMILY, LABEL_PX)
                    .into_font()
                    .color(&ink_on(fill))
                    .pos(Pos::new(HPos::Left, VPos::Center));
                area.draw(&Text::new(
                    label.as_str(),
                    (x0 + 3, top + ROW_PX as i32 / 2),
                    style,
                ))
                .map_err(drawing)?;
            }
        }
        let legend_top = (Self::row_top_px(self.rows) + 8) as i32;
        self.draw_legend(area, legend_top)
    }
}
