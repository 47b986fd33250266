"""Sample traffic for the compose setup: keyed JSON orders with updates and deletes.

    python produce_sample.py --bootstrap-servers kafka:9092 --topic orders --rate 2000

Each record's key is the order id; ~10% of the records are tombstones (null value), which
`paimon-streaming ingest` turns into deletes. Runs until stopped (or --count records).
"""
from __future__ import annotations

import argparse
import json
import random
import time

from kafka import KafkaProducer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--rate", type=int, default=1000, help="records per second")
    p.add_argument("--keys", type=int, default=100_000, help="size of the order id space")
    p.add_argument("--count", type=int, default=0, help="stop after this many records (0: never)")
    args = p.parse_args()
    producer = KafkaProducer(bootstrap_servers=args.bootstrap_servers, linger_ms=20)
    rng = random.Random(1)
    sent = 0
    while not args.count or sent < args.count:
        second = time.monotonic()
        for _ in range(args.rate):
            order = rng.randrange(args.keys)
            value = None if rng.random() < 0.1 else json.dumps(
                {"id": order, "customer": f"c{order % 997}", "amount": round(rng.random() * 500, 2),
                 "status": rng.choice(["new", "paid", "shipped"]), "ts": int(time.time() * 1000)}).encode()
            producer.send(args.topic, key=str(order).encode(), value=value)
            sent += 1
        producer.flush()
        print(f"sent {sent} records", flush=True)
        time.sleep(max(0.0, 1 - (time.monotonic() - second)))


if __name__ == "__main__":
    main()
