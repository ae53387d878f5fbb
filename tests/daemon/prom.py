#!/usr/bin/python3
"""prom.py - HTTP helpers of tests/suite_metrics.sh (standard library only,
127.0.0.1 only).

  prom.py get PORT PATH         prints the status line's code, then the body
  prom.py sample PORT NAME      scrapes /metrics, prints the value of the
                                sample NAME (name and labels exactly as
                                written, e.g. 'x_bucket{le="+Inf"}'), or
                                exits 1 when it is absent
  prom.py query PORT EXPR       asks Prometheus's HTTP API (/api/v1/query)
                                and prints the first result's value, or
                                exits 1 when there is none
Exits 2 when the server cannot be reached.
"""
import json
import sys
import urllib.error
import urllib.parse
import urllib.request


def fetch(port, path):
    url = "http://127.0.0.1:%s%s" % (port, path)
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except (OSError, urllib.error.URLError) as e:
        print("prom.py: %s: %s" % (url, e), file=sys.stderr)
        sys.exit(2)


def main():
    cmd, port, arg = sys.argv[1], sys.argv[2], sys.argv[3]
    if cmd == "get":
        status, body = fetch(port, arg)
        print(status)
        sys.stdout.write(body)
        return 0
    if cmd == "sample":
        status, body = fetch(port, "/metrics")
        if status != 200:
            return 1
        for line in body.splitlines():
            if line.startswith("#"):
                continue
            name, _, value = line.rpartition(" ")
            if name == arg:
                print(value)
                return 0
        return 1
    if cmd == "query":
        status, body = fetch(port, "/api/v1/query?" +
                             urllib.parse.urlencode({"query": arg}))
        if status != 200:
            return 1
        res = json.loads(body).get("data", {}).get("result", [])
        if not res:
            return 1
        print(res[0]["value"][1])
        return 0
    print("prom.py: unknown command %s" % cmd, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
