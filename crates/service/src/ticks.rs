//! The calc-period ticker (`serve`'s default; `--no-calc-period-ticks` turns
//! it off): a `tick` at each `PriorityCalcPeriod` boundary of the wall clock,
//! so that no event pays for settling a boundary. It ticks only a service fed
//! live (its time within [`live_window_secs`] of the boundary), so a log of
//! past times replayed into the service is never cut by a tick of today. The
//! wall clock is read through [`SteadyWall`], so a brief jump of the system
//! clock never logs a tick in the future (`clock`).

use std::time::{Duration, Instant};

use fairflow_ingest::LogLine;
use fairflow_model::config::calc_period_boundary;
use fairflow_model::event::Op;
use fairflow_model::{Event, Time};

use crate::applier::{ApplierHandle, WriteError};
use crate::backend::Gauges;
use crate::clock::{Reading, SteadyWall, WallClock};

/// The grace after a boundary before the ticker settles it, seconds: an
/// event timed before a settled boundary is refused as time going
/// backwards, so the ticker leaves writers this long to send it.
pub const DEFAULT_TICK_GRACE_SECS: u64 = 2;

/// How far behind a boundary the service's time may be for the ticker to
/// settle it: four periods, at least an hour. A service fed live is never
/// further behind than a period (each tick moves it to the boundary); one
/// further behind is replaying the past, or was stopped for a while (its
/// first live event then settles the gap, and the ticker follows again).
pub fn live_window_secs(calc_period_secs: i64) -> Time {
    calc_period_secs.saturating_mul(4).max(3_600)
}

/// The boundary a tick should settle now: the latest `PriorityCalcPeriod`
/// boundary at or before `wall_secs` (the wall clock less the grace), if
/// the engine has events, its configuration has a calc period and its time
/// is before that boundary by at most [`live_window_secs`].
pub fn due_calc_period_boundary(gauges: Gauges, wall_secs: Time) -> Option<Time> {
    if gauges.now <= 0 {
        return None;
    }
    let window = live_window_secs(gauges.calc_period_secs);
    calc_period_boundary(gauges.calc_period_secs, wall_secs)
        .filter(|&boundary| boundary > gauges.now && boundary - gauges.now <= window)
}

/// Log what a reading of the guarded clock saw, once per jump.
fn note_reading(reading: Reading) {
    match reading {
        Reading::Jumped {
            skew_secs,
            new: true,
            ..
        } => tracing::warn!(
            skew_secs,
            "the wall clock jumped; calc-period ticks follow the monotonic clock until the \
             jump has held for {} s",
            crate::clock::JUMP_ACCEPT_AFTER_SECS
        ),
        Reading::Accepted { skew_secs, .. } => tracing::warn!(
            skew_secs,
            "the wall clock's jump held: calc-period ticks follow its new time"
        ),
        Reading::Steady(_) | Reading::Jumped { .. } => {}
    }
}

/// Settle each `PriorityCalcPeriod` boundary of the wall clock in a `tick`
/// of its own, `grace` after it (`serve`'s default), as Slurm's
/// decay thread runs once per period: every running job's usage is charged
/// at the boundary before the next event arrives, so that event pays only
/// for itself. The tick is logged like any write. An event that arrives
/// later with a time before the boundary is rejected as time going
/// backwards (taps charge such records at the current time), which is why
/// the tick waits `grace` and why this is for a service fed live.
pub async fn tick_calc_periods(
    applier: ApplierHandle,
    grace: Duration,
    clock: WallClock,
    accept_jump_after_secs: f64,
) {
    let started = Instant::now();
    let mut wall = SteadyWall::new(clock.now_secs(), 0.0, accept_jump_after_secs);
    let mut line = 0u64;
    loop {
        let Some(gauges) = applier.gauges().await else {
            return;
        };
        let reading = wall.read(clock.now_secs(), started.elapsed().as_secs_f64());
        note_reading(reading);
        let wall_secs = reading.trusted_secs().floor() as Time - grace.as_secs() as Time;
        if let Some(boundary) = due_calc_period_boundary(gauges, wall_secs) {
            line += 1;
            let tick = LogLine {
                line,
                event: Ok(Event {
                    t: boundary,
                    op: Op::Tick,
                }),
            };
            match applier.write(vec![tick]).await {
                Ok(_) => tracing::debug!(boundary, "calc-period boundary settled"),
                Err(WriteError::Stopped) => return,
                Err(e) => tracing::warn!(boundary, "calc-period tick not applied: {e}"),
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gauges(now: Time, calc_period_secs: i64) -> Gauges {
        Gauges {
            now,
            calc_period_secs,
            ..Gauges::default()
        }
    }

    #[test]
    fn the_due_boundary_is_the_last_one_at_or_before_the_wall_clock() {
        // Period 300 s, engine at 1000: the wall clock at 1199 has no
        // boundary after 1000 (the last is 900); at 1200 and up to 1499 the
        // boundary 1200 is due; at 1500, 1500.
        assert_eq!(due_calc_period_boundary(gauges(1000, 300), 1199), None);
        assert_eq!(
            due_calc_period_boundary(gauges(1000, 300), 1200),
            Some(1200)
        );
        assert_eq!(
            due_calc_period_boundary(gauges(1000, 300), 1499),
            Some(1200)
        );
        assert_eq!(
            due_calc_period_boundary(gauges(1000, 300), 1500),
            Some(1500)
        );
        // The engine already at the boundary: nothing to settle.
        assert_eq!(due_calc_period_boundary(gauges(1200, 300), 1300), None);
        // No calc period, or no events yet: no ticks.
        assert_eq!(due_calc_period_boundary(gauges(1000, 0), 5000), None);
        assert_eq!(due_calc_period_boundary(gauges(0, 300), 5000), None);
    }

    #[test]
    fn a_service_far_behind_the_wall_clock_is_not_ticked() {
        // Period 300 s: the window is an hour (4 periods are 1,200 s). The
        // engine at 1000: the boundary 4500 is 3,500 s ahead, due; 4800 is
        // 3,800 s ahead, not (a log of the past being replayed).
        assert_eq!(live_window_secs(300), 3_600);
        assert_eq!(live_window_secs(3_600), 14_400);
        assert_eq!(
            due_calc_period_boundary(gauges(1000, 300), 4700),
            Some(4500)
        );
        assert_eq!(due_calc_period_boundary(gauges(1000, 300), 4800), None);
        // A log of 2023 in a service of 2026: never ticked.
        assert_eq!(
            due_calc_period_boundary(gauges(1_700_000_000, 300), 1_796_000_000),
            None
        );
    }
}
