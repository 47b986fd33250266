"""The driver's side of format("kafka-python"): which topic partitions a query reads, their
earliest and latest offsets, and where the starting and ending options put each partition.
Shared by the streaming reader (a query's first offsets) and the batch reader (its ranges)."""
from __future__ import annotations

import re
from typing import Mapping

from paimon_streaming.errors import InvalidOptionError, PaimonError
from .kafka_options import KafkaOptions, parse_offsets_json

EARLIEST, LATEST = -2, -1

Offsets = dict[str, dict[str, int]]  # Spark's Kafka offsets: {"topic": {"partition": offset}}
Flat = dict[tuple[str, int], int]     # {(topic, partition): offset}


class KafkaSourceError(PaimonError):
    """A Kafka read that cannot go on (missing offsets, a partition that yields nothing)."""


def flatten(offsets: Mapping[str, Mapping[str, int]]) -> Flat:
    return {(t, int(p)): int(o) for t, parts in offsets.items() for p, o in parts.items()}


def nest(flat: Mapping[tuple[str, int], int]) -> Offsets:
    out: Offsets = {}
    for (t, p), o in sorted(flat.items()):
        out.setdefault(t, {})[str(p)] = o
    return out


class KafkaOffsetResolver:
    """Asks the brokers through one kafka-python consumer, made when first needed (the readers
    holding it are pickled to Spark's workers without it)."""

    def __init__(self, options: KafkaOptions):
        self.options = options
        self._consumer = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_consumer"] = None
        return state

    @property
    def consumer(self):
        if self._consumer is None:
            self._consumer = self.options.consumer()
        return self._consumer

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _partitions(self) -> list:
        """The topic partitions read: assigned, subscribed, or matching the pattern now. One
        metadata request each time: kafka-python's cache is refreshed only every
        metadata.max.age.ms (5 minutes), and partitions added to a topic would be read that late."""
        from kafka import TopicPartition
        known = self.consumer.topics()  # refreshes the metadata of every topic
        if self.options.assign:
            for topic, partition in self.options.assign:
                if partition not in (self.consumer.partitions_for_topic(topic) or ()):
                    raise KafkaSourceError(f"Kafka topic '{topic}' has no partition {partition} on "
                                           f"{self.options.bootstrap_servers} (option 'assign')")
            return [TopicPartition(t, p) for t, p in self.options.assign]
        if self.options.pattern is not None:
            rx = re.compile(self.options.pattern)
            topics = sorted(t for t in known if rx.fullmatch(t))
        else:
            topics = list(self.options.topics)
        tps = []
        for topic in topics:
            parts = self.consumer.partitions_for_topic(topic)
            if not parts:
                if self.options.pattern is None:
                    raise KafkaSourceError(f"Kafka topic '{topic}' does not exist on "
                                           f"{self.options.bootstrap_servers} (option 'subscribe')")
                continue
            tps.extend(TopicPartition(topic, p) for p in sorted(parts))
        return tps

    def _bounds(self, tps: list) -> tuple[Flat, Flat]:
        """(earliest, latest) offsets per (topic, partition)."""
        from kafka.errors import KafkaTimeoutError
        if not tps:
            return {}, {}
        try:
            first = self.consumer.beginning_offsets(tps)
            last = self.consumer.end_offsets(tps)
        except KafkaTimeoutError:  # kafka-python's message names no topic
            self._partitions()  # a topic deleted since `tps` were listed: its own error names it
            raise
        return ({(tp.topic, tp.partition): o for tp, o in first.items()},
                {(tp.topic, tp.partition): o for tp, o in last.items()})

    def starting_offsets(self, earliest: Flat, latest: Flat) -> Flat:
        """Where each partition starts, first found first: startingTimestamp,
        startingOffsetsByTimestamp, startingOffsets (partitions its JSON leaves out: earliest)."""
        o = self.options
        if o.starting_timestamp is not None or o.starting_by_timestamp:
            return self._offsets_at_timestamps(o.starting_timestamp, o.starting_by_timestamp, latest,
                                               "startingOffsetsByTimestamp", none_found_fails=o.timestamp_strategy == "error")
        if o.starting_offsets in ("earliest", "latest"):
            return dict(earliest if o.starting_offsets == "earliest" else latest)
        given = flatten(parse_offsets_json(o.starting_offsets))
        unknown = sorted(set(given) - set(earliest))
        if unknown:  # a misspelt topic would otherwise start everything at earliest, unnoticed
            raise InvalidOptionError(f"startingOffsets names partitions that are not read: {unknown} (read: "
                                     f"{sorted(earliest)})")
        return {key: _resolve(given.get(key, EARLIEST), earliest[key], latest[key]) for key in earliest}

    def ending_offsets(self, earliest: Flat, latest: Flat) -> Flat:
        """Where each partition of a batch query ends (exclusive), first found first:
        endingTimestamp, endingOffsetsByTimestamp (a partition without such a record: latest, as
        in Spark), endingOffsets (its JSON must name every partition read, as in Spark)."""
        o = self.options
        if o.ending_timestamp is not None or o.ending_by_timestamp:
            return self._offsets_at_timestamps(o.ending_timestamp, o.ending_by_timestamp, latest,
                                               "endingOffsetsByTimestamp", none_found_fails=False)
        if o.ending_offsets == "latest":
            return dict(latest)
        given = flatten(parse_offsets_json(o.ending_offsets, "endingOffsets"))
        _check_names_every_partition("endingOffsets", given, latest)
        ends = {key: _resolve(given[key], earliest[key], latest[key]) for key in latest}
        beyond = {key: (e, latest[key]) for key, e in ends.items() if e > latest[key]}
        if beyond:
            what = ", ".join(f"topic '{t}' partition {p} at {e} (latest {last})" for (t, p), (e, last) in sorted(beyond.items()))
            raise KafkaSourceError(f"endingOffsets past the latest offset: {what}; those records do not exist yet")
        return ends

    def _offsets_at_timestamps(self, everywhere: int | None, by_partition: tuple[tuple[str, int, int], ...],
                               latest: Flat, option: str, none_found_fails: bool) -> Flat:
        """Each partition's first offset whose record timestamp is at or after the given one
        (Kafka's offsetsForTimes); a partition without such a record fails, or takes its latest."""
        from kafka import TopicPartition
        if everywhere is not None:
            wanted = {key: everywhere for key in latest}
        else:
            wanted = {(t, p): ts for t, p, ts in by_partition}
            _check_names_every_partition(option, wanted, latest)
        found = self.consumer.offsets_for_times({TopicPartition(t, p): ts for (t, p), ts in wanted.items()})
        out = {}
        for (t, p), ts in wanted.items():
            hit = found.get(TopicPartition(t, p))
            if hit is None and none_found_fails:
                raise KafkaSourceError(
                    f"Kafka topic '{t}' partition {p} has no record with a timestamp at or after {ts} (starting "
                    "timestamp); set startingOffsetsByTimestampStrategy=latest to start such partitions at their "
                    "latest offset")
            out[(t, p)] = latest[(t, p)] if hit is None else hit.offset
        return out


def _resolve(offset: int, earliest: int, latest: int) -> int:
    """An offset of a JSON option: -2 earliest, -1 latest, or itself."""
    return earliest if offset == EARLIEST else latest if offset == LATEST else offset


def _check_names_every_partition(option: str, given: Mapping[tuple[str, int], int], read: Flat) -> None:
    missing, unknown = sorted(set(read) - set(given)), sorted(set(given) - set(read))
    if missing or unknown:
        raise InvalidOptionError(
            f"{option} must give a value for every partition read, as in Spark"
            + (f"; missing {missing}" if missing else "") + (f"; not read {unknown}" if unknown else ""))
