"""The options of format("kafka-python"), parsed and checked as Spark's Kafka source takes
them (the list is in `sources/kafka.py`'s docstring): a misspelt value is an error naming the
option, and an option of Spark's batch queries is refused rather than ignored."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from paimon_streaming.errors import InvalidOptionError


@dataclass(frozen=True)
class KafkaOptions:
    """The parsed options of the source (see the module docstring)."""

    bootstrap_servers: str
    topics: tuple[str, ...]
    pattern: str | None
    starting_offsets: str
    max_offsets_per_trigger: int | None
    include_headers: bool
    poll_timeout_ms: int
    consumer_config: tuple[tuple[str, Any], ...]
    assign: tuple[tuple[str, int], ...] = ()
    starting_timestamp: int | None = None
    starting_by_timestamp: tuple[tuple[str, int, int], ...] = ()  # (topic, partition, timestamp ms)
    timestamp_strategy: str = "error"
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_s: float = 900.0

    @staticmethod
    def parse(options: Mapping[str, str]) -> "KafkaOptions":
        opts = {k.lower(): v for k, v in options.items()}
        servers = opts.get("kafka.bootstrap.servers")
        if not servers:
            raise InvalidOptionError("format('kafka-python') needs option 'kafka.bootstrap.servers' (host:port,...)")
        for key, name in _BATCH_ONLY.items():
            if key in opts:
                raise InvalidOptionError(f"option '{name}' applies to batch queries, as in Spark's Kafka source; "
                                         "format('kafka-python') reads streams (spark.readStream)")
        topics = tuple(t.strip() for t in opts.get("subscribe", "").split(",") if t.strip())
        pattern = opts.get("subscribepattern")
        assign = _parse_assign(opts["assign"]) if "assign" in opts else ()
        if sum(map(bool, (topics, pattern, assign))) != 1:
            raise InvalidOptionError("format('kafka-python') needs exactly one of the options 'assign' (JSON like "
                                     "{\"orders\": [0, 1]}), 'subscribe' (comma-separated topics) and "
                                     "'subscribePattern' (a regex)")
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise InvalidOptionError(f"subscribePattern '{pattern}' is not a valid regex: {exc}") from exc
        max_offsets = _count(opts, "maxOffsetsPerTrigger")
        min_offsets = _count(opts, "minOffsetsPerTrigger")
        if min_offsets and max_offsets and min_offsets > max_offsets:
            raise InvalidOptionError(f"minOffsetsPerTrigger ({min_offsets}) is above maxOffsetsPerTrigger "
                                     f"({max_offsets})")
        starting = opts.get("startingoffsets", "latest").strip()
        if starting.lower() in ("earliest", "latest"):
            starting = starting.lower()
        else:
            parse_offsets_json(starting)
        strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
        if strategy not in ("error", "latest"):
            raise InvalidOptionError(f"startingOffsetsByTimestampStrategy must be 'error' or 'latest', got '{strategy}'")
        passthrough = tuple(sorted(
            (k[len("kafka."):].replace(".", "_"), _config_value(v)) for k, v in opts.items()
            if k.startswith("kafka.") and k != "kafka.bootstrap.servers"))
        return KafkaOptions(servers, topics, pattern, starting, max_offsets, _flag(opts, "includeHeaders", False),
                            int(opts.get("kafkaconsumer.polltimeoutms", "120000")), passthrough, assign,
                            _count(opts, "startingTimestamp", minimum=0),
                            _parse_timestamps_json(opts["startingoffsetsbytimestamp"])
                            if "startingoffsetsbytimestamp" in opts else (),
                            strategy, _flag(opts, "failOnDataLoss", True), _count(opts, "minPartitions"),
                            min_offsets, _duration_s(opts.get("maxtriggerdelay", "15m")))

    def consumer(self, bulk: bool = False):
        """A kafka-python consumer that never commits to Kafka: offsets live in Spark's checkpoint.
        With `bulk`, its polls return each fetch response's records as columns (`FetchedRecords`)."""
        from kafka import KafkaConsumer

        from .kafka import decode_in_bulk
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap_servers.split(","), enable_auto_commit=False,
                                 group_id=None, **dict(self.consumer_config))
        if bulk:
            decode_in_bulk(consumer)
        return consumer


_BATCH_ONLY = {k.lower(): k for k in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")}


def _count(opts: Mapping[str, str], name: str, minimum: int = 1) -> int | None:
    """An integer option (at least `minimum`), or None when absent."""
    value = opts.get(name.lower())
    if value is None:
        return None
    if not value.strip().isdigit() or int(value) < minimum:
        raise InvalidOptionError(f"{name} must be an integer >= {minimum}, got '{value}'")
    return int(value)


def _flag(opts: Mapping[str, str], name: str, default: bool) -> bool:
    value = opts.get(name.lower())
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise InvalidOptionError(f"{name} must be 'true' or 'false', got '{value}'")
    return value.strip().lower() == "true"


_DURATION_UNITS = {"ms": 0.001, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def _duration_s(text: str) -> float:
    """Spark's time strings as maxTriggerDelay takes them: `15m`, `30s`, `500ms`, `1h`; a bare
    number is milliseconds."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", text.lower())
    if not match or match.group(2) not in ("", *_DURATION_UNITS):
        raise InvalidOptionError(f"maxTriggerDelay must be a duration like '15m', '30s' or '500ms', got '{text}'")
    return int(match.group(1)) * _DURATION_UNITS.get(match.group(2), 0.001)


def _parse_assign(text: str) -> tuple[tuple[str, int], ...]:
    try:
        parsed = json.loads(text)
        if not isinstance(parsed, dict) or not parsed or not all(
                isinstance(v, list) and v and all(isinstance(p, int) and p >= 0 for p in v) for v in parsed.values()):
            raise ValueError("not an object of non-empty lists of partition numbers")
    except ValueError as exc:
        raise InvalidOptionError(f"assign must be JSON like {{\"orders\": [0, 1]}}, got {text!r}: {exc}") from exc
    return tuple(sorted({(t, p) for t, parts in parsed.items() for p in parts}))


def _parse_timestamps_json(text: str) -> tuple[tuple[str, int, int], ...]:
    try:
        parsed = json.loads(text)
        if not isinstance(parsed, dict) or not all(
                isinstance(v, dict) and all(k.isdigit() and isinstance(t, int) and t >= 0 for k, t in v.items())
                for v in parsed.values()):
            raise ValueError("not an object of objects of partition -> timestamp (ms)")
    except ValueError as exc:
        raise InvalidOptionError(f"startingOffsetsByTimestamp must be JSON like {{\"orders\": {{\"0\": "
                                 f"1700000000000}}}}, got {text!r}: {exc}") from exc
    return tuple(sorted((t, int(p), ts) for t, parts in parsed.items() for p, ts in parts.items()))


def _config_value(value: str) -> Any:
    """kafka-python wants ints and bools typed; Spark options are strings."""
    if value.lstrip("-").isdigit():
        return int(value)
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


def parse_offsets_json(text: str) -> dict[str, dict[str, int]]:
    try:
        parsed = json.loads(text)
        if not isinstance(parsed, dict) or not all(
                isinstance(v, dict) and all(isinstance(o, int) for o in v.values()) for v in parsed.values()):
            raise ValueError("not an object of objects of integers")
    except ValueError as exc:
        raise InvalidOptionError(f"startingOffsets must be 'earliest', 'latest' or JSON like "
                                 f"{{\"topic\": {{\"0\": 23, \"1\": -2}}}}, got {text!r}: {exc}") from exc
    return parsed
