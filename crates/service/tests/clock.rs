//! Time that cannot run ahead, over loopback: the calc-period ticker reads a
//! wall clock the test shifts. A brief jump of an hour logs no tick in the
//! future, so a write timed by the real clock is still accepted after the
//! clock comes back; an event timed more than the lead ahead of the clock is
//! rejected naming `t`, and changes nothing.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fairflow_engine::EngineChoice;
use fairflow_model::Config;
use fairflow_service::applier::{self, ApplierConfig};
use fairflow_service::clock::{EventLead, WallClock};
use fairflow_service::engine_backend::EngineBackend;
use fairflow_service::http::{self, HttpConfig};
use fairflow_service::metrics::Metrics;
use fairflow_service::ticks::tick_calc_periods;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TOKEN: &str = "clock-test-token";
const PERIOD_SECS: i64 = 60;

async fn post_events(address: &str, body: &str) -> (u16, Value) {
    let mut stream = TcpStream::connect(address).await.unwrap();
    let raw = format!(
        "POST /v1/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer \
         {TOKEN}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(raw.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let text = String::from_utf8_lossy(&response).to_string();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    let body = text.split_once("\r\n\r\n").unwrap().1;
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn real_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_brief_clock_jump_logs_no_future_tick_and_future_events_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let engine = fairflow_engine::start(EngineChoice::Batch, Config::default()).unwrap();
    let applier_config = ApplierConfig {
        data_dir: dir.path().to_path_buf(),
        checkpoint_every: 1000,
        queue_capacity: 8,
        max_group: 16,
        recover: false,
    };
    let metrics = Arc::new(Metrics::new());
    let (handle, _report, thread) =
        applier::start(EngineBackend::new(engine), applier_config, metrics.clone()).unwrap();
    // The clock the service reads: the system's plus a shift the test sets.
    let shift_secs = Arc::new(AtomicI64::new(0));
    let clock = {
        let shift_secs = shift_secs.clone();
        WallClock::from_fn(move || {
            let real = WallClock::system().now_secs();
            real + shift_secs.load(Ordering::SeqCst) as f64
        })
    };
    let handle = handle.with_event_lead(Some(EventLead {
        clock: clock.clone(),
        max_secs: 300,
    }));
    let ticker = tokio::spawn(tick_calc_periods(
        handle.clone(),
        Duration::ZERO,
        clock,
        600.0,
    ));
    let config = HttpConfig {
        write_token: Some(TOKEN.into()),
        ..HttpConfig::default()
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let router = http::router(handle.clone(), metrics, config.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let stopped = async {
            let _ = stopped.await;
        };
        http::serve(listener, router, &config, stopped, Duration::from_secs(2)).await;
    });

    // A running job from two periods back, under a one-minute calc period.
    let t0 = real_now() - 2 * PERIOD_SECS;
    let setup = format!(
        "{{\"op\":\"config\",\"t\":{t0},\"set\":{{\"PriorityCalcPeriod\":1}}}}\n\
         {{\"op\":\"account\",\"t\":{t0},\"name\":\"a\",\"shares\":1}}\n\
         {{\"op\":\"user\",\"t\":{t0},\"user\":\"alice\",\"account\":\"a\"}}\n\
         {{\"op\":\"submit\",\"t\":{t0},\"job\":\"1\",\"user\":\"alice\",\"account\":\"a\"}}\n\
         {{\"op\":\"start\",\"t\":{t0},\"job\":\"1\"}}\n"
    );
    let (status, outcome) = post_events(&address, &setup).await;
    assert_eq!(
        (status, outcome["accepted"].as_u64()),
        (200, Some(5)),
        "{outcome}"
    );
    // The ticker settles the last boundary: the engine's time moves past t0.
    let engine_now = || async { handle.gauges().await.unwrap().now };
    for _ in 0..100 {
        if engine_now().await > t0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(engine_now().await > t0, "the ticker settles a boundary");

    // The clock jumps an hour forward for three seconds, then comes back.
    shift_secs.store(3600, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        engine_now().await <= real_now(),
        "no tick was logged in the future: {} > {}",
        engine_now().await,
        real_now()
    );
    shift_secs.store(0, Ordering::SeqCst);
    let now = real_now();
    let usage = format!(
        "{{\"op\":\"usage\",\"t\":{now},\"account\":\"a\",\"user\":\"alice\",\"amount\":60}}\n"
    );
    let (status, outcome) = post_events(&address, &usage).await;
    assert_eq!(
        (status, outcome["accepted"].as_u64()),
        (200, Some(1)),
        "{outcome}"
    );

    // An event an hour ahead of the clock is rejected by its `t`; the
    // service's time does not move.
    let before = engine_now().await;
    let ahead = now + 3600;
    let late = format!(
        "{{\"op\":\"usage\",\"t\":{ahead},\"account\":\"a\",\"user\":\"alice\",\"amount\":60}}\n"
    );
    let (status, outcome) = post_events(&address, &late).await;
    assert_eq!(status, 200, "{outcome}");
    assert_eq!(outcome["accepted"].as_u64(), Some(0), "{outcome}");
    let rejected = &outcome["rejected"][0];
    assert_eq!(
        (rejected["line"].as_u64(), rejected["field"].as_str()),
        (Some(1), Some("t"))
    );
    assert!(
        rejected["reason"]
            .as_str()
            .unwrap()
            .contains("ahead of the service's clock"),
        "{rejected}"
    );
    assert!(engine_now().await < ahead && engine_now().await >= before);

    let _ = stop.send(());
    server.await.unwrap();
    ticker.abort();
    let _ = ticker.await;
    drop(handle);
    tokio::task::spawn_blocking(move || thread.join().unwrap())
        .await
        .unwrap();
}
