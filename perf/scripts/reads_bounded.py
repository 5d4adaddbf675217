#!/usr/bin/env python3
"""Reads that cannot stall or exhaust a local `fairflow serve` (issue 40).

  reads_bounded.py PORT PID whatif-ticks SECS   # /v1/top latency while a what-if of
                                                # INCR_ONLY + 600 ticks (17 KB) runs
  reads_bounded.py PORT PID whatif-8mib SECS    # ... while an 8 MiB proposal of ticks runs
  reads_bounded.py PORT PID whatif-limit SECS   # ... while the largest proposal the limits
                                                # take (1,000 ticks, 10,000 events) runs
  reads_bounded.py PORT PID slow-readers SECS   # RSS while 12 clients ask /v1/sprio?format=json
                                                # and never read, for SECS seconds
  reads_bounded.py PORT PID slow-readers-many-states SECS
                                                # the same, each client at a state of its own
                                                # (a tick is written before each; the token is
                                                # read from the file FAIRFLOW_TOKEN_FILE names)

`top` is read back to back on its own connection (`GET /v1/top?k=10`); latencies are
wall-clock round trips in ms (p50, p99, max) over the what-if's life or SECS, whichever ends
first. RSS is /proc/PID/status VmRSS. Loopback only."""
import http.client, json, socket, statistics, sys, threading, time

port, pid, mode, secs = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
NOW = 1701246300  # after the generated log's last event


def rss_mb():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def proposal(ticks, events=0, incr_only=True):
    lines = []
    if incr_only:
        lines.append(json.dumps({"op": "config", "t": NOW, "set": {"PriorityFlags": "INCR_ONLY"}}))
    lines += [json.dumps({"op": "tick", "t": NOW + i}) for i in range(1, ticks + 1)]
    lines += [json.dumps({"op": "tick", "t": NOW + ticks})] * max(0, events - len(lines))
    return "\n".join(lines).encode()


def eight_mib():
    line = json.dumps({"op": "tick", "t": NOW + 1}).encode() + b"\n"
    body, i = bytearray(), 1
    while len(body) < (8 << 20) - 64:
        body += json.dumps({"op": "tick", "t": NOW + i}).encode() + b"\n"
        i += 1
    return bytes(body)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else float("nan")


def whatif(body):
    stop = threading.Event()
    latencies, statuses = [], {}

    def poll_top():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while not stop.is_set():
            started = time.perf_counter()
            try:
                conn.request("GET", "/v1/top?k=10")
                r = conn.getresponse(); r.read()
                statuses[r.status] = statuses.get(r.status, 0) + 1
            except Exception as e:
                statuses[type(e).__name__] = statuses.get(type(e).__name__, 0) + 1
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            latencies.append((time.perf_counter() - started) * 1000)
            time.sleep(0.01)

    poller = threading.Thread(target=poll_top); poller.start()
    time.sleep(1)
    base = len(latencies)
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=secs)
    try:
        conn.request("POST", "/v1/whatif?k=5", body=body)
        r = conn.getresponse(); answer = r.read()
        outcome = f"{r.status} {answer[:160]!r}"
    except Exception as e:
        outcome = f"no answer within {secs} s ({type(e).__name__})"
    took = time.perf_counter() - started
    stop.set(); poller.join()
    during = latencies[base:]
    print(json.dumps({
        "proposal_bytes": len(body), "whatif": outcome, "whatif_secs": round(took, 2),
        "top_reads": len(during), "top_statuses": statuses,
        "top_ms_p50": round(pct(during, 50), 1), "top_ms_p99": round(pct(during, 99), 1),
        "top_ms_max": round(max(during), 1) if during else None,
        "rss_mb": round(rss_mb(), 1)}))


def write_tick(t):
    token = open(__import__("os").environ["FAIRFLOW_TOKEN_FILE"]).read().strip()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = json.dumps({"op": "tick", "t": t}).encode()
    conn.request("POST", "/v1/events", body, {"Authorization": f"Bearer {token}"})
    r = conn.getresponse(); r.read()
    assert r.status == 200, r.status


def first_status(s):
    s.settimeout(10)
    head = s.recv(64, socket.MSG_PEEK)
    return int(head.split()[1]) if head.startswith(b"HTTP/1.1") else None


def slow_readers(many_states=False):
    before = rss_mb()
    socks, statuses = [], []
    for i in range(12):
        if many_states:
            write_tick(NOW + 10 + i)
        s = socket.create_connection(("127.0.0.1", port), source_address=(f"127.0.0.{2 + i}", 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"GET /v1/sprio?format=json HTTP/1.1\r\nHost: x\r\n\r\n")
        socks.append(s)
        statuses.append(first_status(s))
    samples, started = [], time.time()
    while time.time() - started < secs:
        time.sleep(1)
        samples.append(round(rss_mb(), 1))
    closed = 0
    for s in socks:
        s.setblocking(False)
        try:
            closed += s.recv(1, socket.MSG_PEEK) == b""
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/v1/top?k=1"); r = conn.getresponse(); r.read()
    print(json.dumps({"rss_before_mb": round(before, 1), "rss_peak_mb": max(samples),
                      "rss_end_mb": samples[-1], "growth_peak_mb": round(max(samples) - before, 1),
                      "samples_mb": samples, "closed_by_server": closed, "statuses": statuses,
                      "top_after": r.status}))
    for s in socks:
        s.close()


if mode == "whatif-ticks":
    whatif(proposal(600))
elif mode == "whatif-8mib":
    whatif(eight_mib())
elif mode == "whatif-limit":
    whatif(proposal(999, events=10_000))
elif mode == "slow-readers":
    slow_readers()
elif mode == "slow-readers-many-states":
    slow_readers(many_states=True)
else:
    sys.exit(f"unknown mode {mode}")
