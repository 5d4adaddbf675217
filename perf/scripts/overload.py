#!/usr/bin/env python3
"""Overload a local `fairflow serve`: N client threads post a 2 MB body of
usage events as fast as they are answered, for D seconds, from source
addresses 127.0.0.1..127.0.0.4 (a quarter each). Samples the server's RSS
(/proc/PID/status) and a /healthz round trip every second. Loopback only."""
import http.client, socket, sys, threading, time, json

port, pid, token_file, clients, duration = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
token = open(token_file).read().strip()
H = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"}

class Conn(http.client.HTTPConnection):
    def __init__(self, source):
        super().__init__("127.0.0.1", int(port), timeout=120, source_address=(source, 0))

def post(body, source="127.0.0.1"):
    c = Conn(source); c.request("POST", "/v1/events", body=body, headers=H)
    r = c.getresponse(); data = r.read(); c.close(); return r.status, data

setup = "\n".join([
    '{"op":"account","t":1700000000,"name":"phys","shares":1}',
    '{"op":"user","t":1700000000,"user":"alice","account":"phys","shares":1}'])
print("setup", post(setup.encode()))
line = '{"op":"usage","t":1700000100,"account":"phys","user":"alice","amount":1}'
body = ("\n".join([line] * 20000)).encode()
print("body bytes", len(body))

stop = time.time() + duration
stats = {"ok": 0, "other": {}, "errors": 0, "events": 0}
lock = threading.Lock()

def client(i):
    source = f"127.0.0.{1 + i % 4}"
    while time.time() < stop:
        try:
            status, data = post(body, source)
            with lock:
                if status == 200:
                    stats["ok"] += 1
                    stats["events"] += json.loads(data)["accepted"]
                else:
                    stats["other"][status] = stats["other"].get(status, 0) + 1
        except Exception as e:
            with lock:
                stats["errors"] += 1
            time.sleep(0.05)

def rss():
    fields = {}
    for l in open(f"/proc/{pid}/status"):
        k, v = l.split(":", 1)
        fields[k] = v.strip()
    return int(fields["VmRSS"].split()[0]) // 1024, int(fields["VmHWM"].split()[0]) // 1024

threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
for t in threads: t.start()
samples, health = [], []
while time.time() < stop:
    time.sleep(1)
    samples.append(rss()[0])
    t0 = time.time()
    try:
        c = Conn("127.0.0.9"); c.request("GET", "/healthz"); r = c.getresponse(); r.read(); c.close()
        health.append((r.status, (time.time() - t0) * 1000))
    except Exception as e:
        health.append((0, (time.time() - t0) * 1000))
for t in threads: t.join(timeout=130)
now, peak = rss()
lat = sorted(h[1] for h in health)
print(json.dumps({
    "clients": clients, "duration_s": duration, "requests_ok": stats["ok"], "other_status": stats["other"],
    "client_errors": stats["errors"], "events_accepted": stats["events"],
    "events_per_s": round(stats["events"] / duration),
    "rss_mib_samples_max": max(samples), "rss_mib_samples_median": sorted(samples)[len(samples)//2],
    "rss_mib_peak_VmHWM": peak, "rss_mib_after": now,
    "healthz_ok": sum(1 for h in health if h[0] == 200), "healthz_total": len(health),
    "healthz_ms_median": round(lat[len(lat)//2], 1), "healthz_ms_max": round(lat[-1], 1)}, indent=1))
