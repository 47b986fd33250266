"""The options of format("kafka-python"), parsed and checked as Spark's Kafka source takes
them (the list is in `sources/kafka.py`'s docstring): a misspelt value is an error naming the
option, and an option of the other kind of query (streaming or batch) is refused rather than
ignored, except the trigger options, which batch queries ignore with a warning as Spark does."""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any, Mapping

from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.options import misspelt_name

log = logging.getLogger("paimon_streaming.source")


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
    ending_offsets: str = "latest"  # batch queries: where each partition's read ends
    ending_timestamp: int | None = None
    ending_by_timestamp: tuple[tuple[str, int, int], ...] = ()
    max_records_per_partition: int | None = None

    @staticmethod
    def parse(options: Mapping[str, str], batch: bool = False) -> "KafkaOptions":
        """Streaming query options, or with `batch` those of `spark.read` (Spark's defaults and
        refusals for each: a batch reads from earliest to latest, and cannot start at latest)."""
        opts = {k.lower(): v for k, v in options.items()}
        servers = opts.get("kafka.bootstrap.servers")
        if not servers:
            raise InvalidOptionError("format('kafka-python') needs option 'kafka.bootstrap.servers' (host:port,...)")
        _check_consumer_settings(opts)
        refuse_misspelt(opts)
        if batch:
            for key, name in _STREAM_ONLY.items():
                if key in opts:
                    log.warning("option '%s' is ignored in batch queries (as in Spark's Kafka source)", name)
        else:
            for key, name in _BATCH_ONLY.items():
                if key in opts:
                    raise InvalidOptionError(f"option '{name}' applies to batch queries (spark.read), as in Spark's "
                                             "Kafka source; a streaming query reads until it is stopped")
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
        starting = _offsets_option(opts, "startingOffsets", "earliest" if batch else "latest",
                                   refused="latest" if batch else None)
        ending = _offsets_option(opts, "endingOffsets", "latest", refused="earliest")
        strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
        if strategy not in ("error", "latest"):
            raise InvalidOptionError(f"startingOffsetsByTimestampStrategy must be 'error' or 'latest', got '{strategy}'")
        passthrough = tuple(sorted(_consumer_setting(k, v) for k, v in opts.items()
                                   if k.startswith("kafka.") and k != "kafka.bootstrap.servers"))
        return KafkaOptions(servers, topics, pattern, starting, max_offsets, include_headers(opts),
                            int(opts.get("kafkaconsumer.polltimeoutms", "120000")), passthrough, assign,
                            _count(opts, "startingTimestamp", minimum=0),
                            _parse_timestamps_json(opts["startingoffsetsbytimestamp"], "startingOffsetsByTimestamp")
                            if "startingoffsetsbytimestamp" in opts else (),
                            strategy, _flag(opts, "failOnDataLoss", True), _count(opts, "minPartitions"),
                            min_offsets, _duration_s(opts.get("maxtriggerdelay", "15m")), ending,
                            _count(opts, "endingTimestamp", minimum=0),
                            _parse_timestamps_json(opts["endingoffsetsbytimestamp"], "endingOffsetsByTimestamp")
                            if "endingoffsetsbytimestamp" in opts else (),
                            _count(opts, "maxRecordsPerPartition"))

    def consumer(self, bulk: bool = False):
        """A kafka-python consumer that never commits to Kafka: offsets live in Spark's checkpoint.
        With `bulk`, its polls return each fetch response's records as columns (`FetchedRecords`)."""
        from kafka import KafkaConsumer
        from kafka.errors import KafkaError

        from .kafka import decode_in_bulk
        from .kafka_offsets import KafkaSourceError
        settings = {"enable_auto_commit": False, "group_id": None, **dict(self.consumer_config)}
        try:
            consumer = KafkaConsumer(bootstrap_servers=self.bootstrap_servers.split(","), **settings)
        except KafkaError as exc:  # "Unable to bootstrap": a stack trace that named no broker
            raise KafkaSourceError(f"cannot reach a Kafka broker at {self.bootstrap_servers} ({exc}): check the "
                                   "address (--bootstrap-servers, kafka.bootstrap.servers) and that the broker is up "
                                   "and reachable from here") from None
        if bulk:
            decode_in_bulk(consumer)
        return consumer


def include_headers(options: Mapping[str, str]) -> bool:
    """includeHeaders, which decides the columns whatever the query."""
    return _flag({k.lower(): v for k, v in options.items()}, "includeHeaders", False)


# Spark's Kafka source options (and its consumer-group ones, which name nothing here: no group is joined)
KNOWN_OPTIONS = ("assign", "subscribe", "subscribePattern", "startingOffsets", "endingOffsets", "startingTimestamp",
                 "endingTimestamp", "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
                 "startingOffsetsByTimestampStrategy", "maxOffsetsPerTrigger", "minOffsetsPerTrigger",
                 "maxTriggerDelay", "minPartitions", "maxRecordsPerPartition", "failOnDataLoss", "includeHeaders",
                 "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
                 "groupIdPrefix")


def refuse_misspelt(options: Mapping[str, str]) -> None:
    """An option one typo away from one of Spark's Kafka source (`startingOffset`) would be
    ignored, and the query would start at the default (latest): refused, naming the option meant."""
    for key in options:
        meant = None if key.lower().startswith("kafka.") else misspelt_name(key, KNOWN_OPTIONS)
        if meant is not None:
            raise InvalidOptionError(f"unknown option {key.lower()!r} of format('kafka-python'): did you mean "
                                     f"{meant!r}?")


_BATCH_ONLY = {k.lower(): k for k in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")}
_STREAM_ONLY = {k.lower(): k for k in ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay")}

# Consumer settings Spark's Kafka source refuses, and why (the source manages offsets and reads bytes).
_REFUSED_SETTINGS = {
    "kafka.auto.offset.reset": "set the source option 'startingOffsets' (earliest, latest or JSON) instead: "
                               "offsets are managed by the query, not by the consumer",
    "kafka.enable.auto.commit": "offsets live in the query's checkpoint; nothing is committed to Kafka",
    "kafka.key.deserializer": "keys are read as bytes; deserialize them with DataFrame operations",
    "kafka.value.deserializer": "values are read as bytes; deserialize them with DataFrame operations",
    "kafka.interceptor.classes": "interceptors could change the records read",
}


def _check_consumer_settings(opts: Mapping[str, str]) -> None:
    for key, why in _REFUSED_SETTINGS.items():
        if key in opts:
            raise InvalidOptionError(f"Kafka option '{key[len('kafka.'):]}' is not supported, as in Spark's Kafka "
                                     f"source: {why}")


def _offsets_option(opts: Mapping[str, str], name: str, default: str, refused: str | None) -> str:
    """startingOffsets / endingOffsets: 'earliest', 'latest' or per-partition JSON; `refused` is the
    word the query cannot take (a batch cannot start at latest, nor end at earliest), refused in
    its JSON form (-1 latest, -2 earliest) too."""
    value = opts.get(name.lower(), default).strip()
    if value.lower() in ("earliest", "latest"):
        value = value.lower()
        found = value == refused
    else:
        given = [o for parts in parse_offsets_json(value, name).values() for o in parts.values()]
        found = refused is not None and {"latest": -1, "earliest": -2}[refused] in given
    if found:
        raise InvalidOptionError(f"{name} cannot be {refused} in a batch query (spark.read), as in Spark's Kafka "
                                 f"source, got {value!r}")
    return value


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


def _parse_timestamps_json(text: str, name: str) -> tuple[tuple[str, int, int], ...]:
    try:
        parsed = json.loads(text)
        if not isinstance(parsed, dict) or not all(
                isinstance(v, dict) and all(k.isdigit() and isinstance(t, int) and t >= 0 for k, t in v.items())
                for v in parsed.values()):
            raise ValueError("not an object of objects of partition -> timestamp (ms)")
    except ValueError as exc:
        raise InvalidOptionError(f"{name} must be JSON like {{\"orders\": {{\"0\": "
                                 f"1700000000000}}}}, got {text!r}: {exc}") from exc
    return tuple(sorted((t, int(p), ts) for t, parts in parsed.items() for p, ts in parts.items()))


def _consumer_setting(option: str, value: str) -> tuple[str, Any]:
    """`kafka.request.timeout.ms` -> ("request_timeout_ms", 5000): kafka-python's keyword, with
    ints, bools and its api_version tuple typed (Spark options are strings)."""
    key = option[len("kafka."):].replace(".", "_")
    text = value.strip()
    if key == "api_version" and re.fullmatch(r"\d+(\.\d+)*", text):
        return key, tuple(int(part) for part in text.split("."))
    if text.lstrip("-").isdigit():
        return key, int(text)
    if text.lower() in ("true", "false"):
        return key, text.lower() == "true"
    return key, value


def parse_offsets_json(text: str, name: str = "startingOffsets") -> dict[str, dict[str, int]]:
    try:
        parsed = json.loads(text)
        if not isinstance(parsed, dict) or not all(
                isinstance(v, dict) and all(isinstance(o, int) for o in v.values()) for v in parsed.values()):
            raise ValueError("not an object of objects of integers")
    except ValueError as exc:
        raise InvalidOptionError(f"{name} must be 'earliest', 'latest' or JSON like "
                                 f"{{\"topic\": {{\"0\": 23, \"1\": -2}}}}, got {text!r}: {exc}") from exc
    return parsed
