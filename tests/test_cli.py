"""The command line: info, snapshots, compact, delete, update; demo and ingest (their runs: test_demo.py,
test_ingest.py); errors exit non-zero with a message."""
from __future__ import annotations

import decimal
import json
import os
import subprocess
import sys
import time

import pyarrow as pa
import pytest

from paimon_streaming.cli import main


def test_info_snapshots_compact(tmp_path, capsys):
    import paimon_streaming as ps
    table = ps.Catalog(str(tmp_path / "wh")).create_table(
        "demo.orders", pa.schema([pa.field("id", pa.int64(), False), ("amount", pa.float64())]),
        primary_keys=["id"], options={"bucket": "4"})
    for b in range(3):
        table.write_arrow(pa.table({"id": pa.array(range(b * 100, b * 100 + 2000), pa.int64()),
                                    "amount": [float(b)] * 2000}))
    path = str(tmp_path / "wh" / "demo.db" / "orders")
    assert main(["snapshots", path, "--json"]) == 0
    assert [s["kind"] for s in json.loads(capsys.readouterr().out)] == ["APPEND"] * 3
    assert main(["info", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["primary_keys"] == ["id"]
    assert main(["compact", path, "--full", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["snapshot"] == 4
    assert main(["snapshots", path]) == 0
    assert "COMPACT" in capsys.readouterr().out


def test_delete_with_where_terms(tmp_path, capsys):
    import paimon_streaming as ps
    table = ps.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", pa.schema([pa.field("id", pa.int64(), False), ("zip", pa.string()), ("day", pa.date32())]),
        options={"deletion-vectors.enabled": "true"})
    table.write_arrow(pa.table({"id": [1, 2, 3, 4], "zip": ["01234", "1234", None, "9"],
                                "day": pa.array([19000, 19001, 19002, 19003], pa.date32())}))
    path = table.path
    assert main(["delete", path, "--where", "zip", "=", "01234", "--dry-run", "--json"]) == 0  # text, not 1234
    assert json.loads(capsys.readouterr().out)["matching_rows"] == 1
    # numbers in a list for a text column are their text too (`[1234]` was the int 1234: refused)
    assert main(["delete", path, "--where", "zip", "in", "[1234, 9.0]", "--dry-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["matching_rows"] == 1
    assert main(["delete", path, "--where", "zip", "in", '["01234", "9"]', "--where", "day", ">=", "2022-01-11"]) == 0
    assert "deleted from" in capsys.readouterr().out
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3]  # 2022-01-11 is day 19,003
    assert main(["delete", path, "--where", "zip", "is null", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["snapshot"] is not None
    assert main(["delete", path, "--where", "id", ">", "100"]) == 0
    assert "no row matched" in capsys.readouterr().out
    assert main(["delete", path, "--where", "day", "=", "someday"]) == 1
    assert "column 'day' (DATE) is not a date" in capsys.readouterr().err
    # a number against a DATE was days since 1970: `day < 20240105` (meant 2024-01-05) deleted every row
    assert main(["delete", path, "--where", "day", "<", "20240105"]) == 1
    assert "value 20240105 (int) does not compare with column 'day' (DATE); give a date" in capsys.readouterr().err
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2]


def test_decimal_values_are_taken_at_their_digits(tmp_path, capsys):
    """A VALUE with a fraction was parsed as a double: 12345678901234567.89 became ...567.88, so
    `--where amt = ...` missed the row, `--set` wrote another value and `<` matched a row above."""
    import decimal
    import paimon_streaming as ps
    schema = pa.schema([("id", pa.int64()), ("amt", pa.decimal128(20, 2)), ("q", pa.decimal128(38, 18)),
                        ("f", pa.float64())])
    table = ps.Catalog(str(tmp_path / "wh")).create_table("db.t", schema)
    d = decimal.Decimal
    table.write_arrow(pa.table({"id": [1, 2], "amt": [d("12345678901234567.89"), d("12345678901234567.80")],
                                "q": [d("0.123456789012345678"), d(1)], "f": [0.1, 0.2]}, schema=schema))
    for where, matching in ((["amt", "=", "12345678901234567.89"], 1), (["amt", "<", "12345678901234567.85"], 1),
                            (["q", "in", "[0.123456789012345678, 2.5]"], 1), (["f", "=", "0.1"], 1)):
        assert main(["delete", table.path, "--where", *where, "--dry-run", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["matching_rows"] == matching, where
    assert main(["update", table.path, "--where", "id", "=", "2", "--set", "amt=99999999999999999.99",
                 "--set", "q=0.123456789012345678"]) == 0
    assert table.to_arrow(columns=["amt", "q"], filter=[("id", "=", 2)]).to_pylist() == \
        [{"amt": d("99999999999999999.99"), "q": d("0.123456789012345678")}]


def test_where_values_compare_exactly_and_may_start_with_a_dash(tmp_path, capsys):
    """A VALUE with a fraction or an exponent was a double for every non-DECIMAL column, so
    `delete --where id = 1.0000000000000001` deleted row 1 (the library compares that exactly);
    a FLOAT or DOUBLE column still takes it as a double, as Spark SQL does. A VALUE starting with
    a dash other than -5 (-1e3, -Infinity, the text -x) was an 'unrecognized argument'."""
    import paimon_streaming as ps
    schema = pa.schema([pa.field("id", pa.int64(), False), ("f", pa.float64()), ("s", pa.string())])
    table = ps.Catalog(str(tmp_path / "wh")).create_table("db.t", schema, primary_keys=["id"])
    table.write_arrow(pa.table({"id": [1, 2, 2**53, -5], "f": [0.0, 0.5, -1000.0, 0.1], "s": ["a", "-x", "b", "c"]},
                               schema=schema))
    for where, matching in ((["id", "=", "1.0000000000000001"], 0), (["id", "=", "9007199254740993.0"], 0),
                            (["id", "=", "1.0"], 1), (["id", "in", "[1.0, 2, 2.5]"], 2), (["f", "=", "0.1"], 1),
                            (["f", "<=", "-1e3"], 1), (["f", ">", "-Infinity"], 4), (["s", "=", "-x"], 1),
                            (["id", "=", "-5"], 1)):
        assert main(["delete", table.path, "--where", *where, "--dry-run", "--json"]) == 0, where
        assert json.loads(capsys.readouterr().out)["matching_rows"] == matching, where
    assert main(["update", table.path, "--where", "f", "<", "-1e2", "--set", "s=-y"]) == 0
    assert table.to_arrow(columns=["s"], filter=[("id", "=", 2**53)]).to_pylist() == [{"s": "-y"}]
    capsys.readouterr()
    with pytest.raises(SystemExit):  # --js is --json to argparse: the usage error comes as JSON too
        main(["delete", table.path, "--js", "--where"])
    assert json.loads(capsys.readouterr().out)["type"] == "UsageError"


def test_fractions_inside_nested_values_are_doubles_for_double_elements(tmp_path):
    """`--set 'fl=[1.5]'` on an ARRAY<DOUBLE> failed "Could not convert Decimal('1.5') ... to
    double": fractions were doubles only for a top-level FLOAT or DOUBLE column."""
    import decimal
    import paimon_streaming as ps
    schema = pa.schema([pa.field("id", pa.int64(), False), ("fl", pa.list_(pa.float64())),
                        ("m", pa.map_(pa.string(), pa.float32())),
                        ("r", pa.struct([("x", pa.float64()), ("amt", pa.decimal128(20, 2))]))])
    table = ps.Catalog(str(tmp_path / "wh")).create_table("db.t", schema, primary_keys=["id"])
    table.write_arrow(pa.table({"id": [1], "fl": [None], "m": [None], "r": [None]}, schema=schema))
    assert main(["update", table.path, "--where", "id", "=", "1", "--set", "fl=[1.5, 2]", "--set", 'm={"k": 0.25}',
                 "--set", 'r={"x": 0.1, "amt": 12345678901234567.89}']) == 0
    assert table.to_arrow(columns=["fl", "m", "r"]).to_pylist() == \
        [{"fl": [1.5, 2.0], "m": [("k", 0.25)], "r": {"x": 0.1, "amt": decimal.Decimal("12345678901234567.89")}}]


def test_output_into_a_closed_pipe_ends_quietly_after_the_work(tmp_path):
    """`paimon-streaming ... | head`: the command's work is done; the closed pipe printed "error:
    [Errno 32] Broken pipe" and exited 1 (with --json, a second traceback). Now it ends as a
    shell tool a closed pipe stops: 141, nothing on stderr."""
    import paimon_streaming as ps
    table = ps.Catalog(str(tmp_path / "wh")).create_table("db.t", pa.schema([("id", pa.int64())]))
    table.write_arrow(pa.table({"id": [1]}))
    read_end, write_end = os.pipe()
    os.close(read_end)
    done = subprocess.run([sys.executable, "-c", "import sys; from paimon_streaming.cli import main; sys.exit(main())",
                           "tag", "create", table.path, "v1", "--json"], stdout=write_end, stderr=subprocess.PIPE,
                          text=True, timeout=120)
    os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")
    assert table.tags() == ["v1"]


def test_a_dry_run_refuses_what_the_change_would_refuse(tmp_path, capsys):
    """A dry run said "1 rows match" for a delete or update the real run refuses."""
    import paimon_streaming as ps
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int32())])
    table = ps.Catalog(str(tmp_path / "wh")).create_table("db.t", schema, primary_keys=["id"],
                                                          options={"bucket": "1", "merge-engine": "first-row"})
    table.write_arrow(pa.table({"id": [1], "v": [1]}, schema=schema))
    for command in (["delete"], ["update", "--set", "v=2"]):
        assert main([*command, table.path, "--where", "id", "=", "1", "--dry-run"]) == 1
        assert "merge engine 'first-row'" in capsys.readouterr().err


def test_update_with_set_values(tmp_path, capsys):
    import paimon_streaming as ps
    table = ps.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", pa.schema([pa.field("id", pa.int64(), False), ("zip", pa.string()), ("n", pa.int32())]),
        primary_keys=["id"], options={"bucket": "1"})
    table.write_arrow(pa.table({"id": [1, 2, 3], "zip": ["1", "2", "3"], "n": pa.array([1, 2, 3], pa.int32())}))
    assert main(["update", table.path, "--where", "n", ">=", "2", "--set", "zip=007", "--set", "n=null",
                 "--dry-run"]) == 0
    assert "2 rows of" in capsys.readouterr().out
    assert main(["update", table.path, "--where", "n", ">=", "2", "--set", "zip=007", "--set", "n=null"]) == 0
    assert "updated" in capsys.readouterr().out
    assert sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "zip": "1", "n": 1}, {"id": 2, "zip": "007", "n": None}, {"id": 3, "zip": "007", "n": None}]
    assert main(["update", table.path, "--where", "id", "=", "1", "--set", "id=5"]) == 1
    assert "primary key columns ['id'] cannot be updated" in capsys.readouterr().err
    assert main(["update", table.path, "--where", "id", "=", "1", "--set", "n"]) == 1
    assert "expected --set COLUMN=VALUE, got 'n'" in capsys.readouterr().err
    # a value the update refuses, its dry run refuses too (it said "1 rows match")
    assert main(["update", table.path, "--where", "id", "=", "1", "--set", "n=abc", "--dry-run"]) == 1
    assert "value 'abc' for column 'n'" in capsys.readouterr().err
    # two values for one column: the last one was used; Spark SQL refuses multiple assignments too
    for second in ("zip=x", "`zip`=x"):
        assert main(["update", table.path, "--where", "id", "=", "1", "--set", "zip=y", "--set", second]) == 1
        assert f"--set '{second}' sets column 'zip' again (after --set 'zip=y')" in capsys.readouterr().err
    assert table.latest_snapshot().id == 2


def test_update_set_reads_column_names_as_alter_does(tmp_path, capsys):
    """`--set 'a=b=NEW'` beside columns a and a=b set a to 'b=NEW', and `--set ' v =NEW'` set v
    where column ' v ' was meant: names holding '=', spaces, dots or backticks go in backticks
    (as alter's), and an unquoted name another such column would also read is refused."""
    import paimon_streaming as ps
    names = ["a", "a=b", "v", " v ", "x.y", "q`"]
    table = ps.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", pa.schema([pa.field("id", pa.int64(), False)] + [(n, pa.string()) for n in names]),
        primary_keys=["id"], options={"bucket": "1"})
    table.write_arrow(pa.table({"id": [1], **{n: ["old"] for n in names}}))
    for item, other in (("a=b=NEW", "a=b"), (" v =NEW", " v ")):
        assert main(["update", table.path, "--where", "id", "=", "1", "--set", item]) == 1
        assert f"is ambiguous: it sets column {item.strip()[0]!r}, but column {other!r} exists" in \
            capsys.readouterr().err
    assert main(["update", table.path, "--where", "id", "=", "1", "--set", "x.y=NEW"]) == 1
    assert "not nested fields; a column name holding a dot goes in backticks (`x.y`=VALUE)" in capsys.readouterr().err
    assert table.latest_snapshot().id == 1
    sets = ["`a=b`=B", "`a`=A=", "` v `= S", "v=V", "`x.y`=X", "`q```=Q"]
    assert main(["update", table.path, "--where", "id", "=", "1", *sum((["--set", s] for s in sets), [])]) == 0
    assert table.to_arrow().to_pylist() == [{"id": 1, "a": "A=", "a=b": "B", "v": "V", " v ": " S", "x.y": "X",
                                            "q`": "Q"}]


def test_errors_exit_non_zero(tmp_path, capsys):
    assert main(["info", str(tmp_path / "nope")]) == 1
    assert "no Paimon table" in capsys.readouterr().err


def test_cli_does_not_import_pyspark_and_validates_ingest_arguments(tmp_path, capsys):
    code = ("import sys; from paimon_streaming.cli import build_parser; build_parser(); "
            "sys.exit(1 if 'pyspark' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
    for command in ("demo", "ingest"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "usage: paimon-streaming " + command in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["ingest", "--topic", "t", "--warehouse", str(tmp_path), "--table", "db.t"])  # no brokers
    assert "--bootstrap-servers" in capsys.readouterr().err
    assert main(["ingest", "--bootstrap-servers", "127.0.0.1:1", "--warehouse", str(tmp_path),
                 "--table", "db.t"]) == 1
    assert "--topic" in capsys.readouterr().err


# ingest arguments no run can take, and the error naming each (they were reported after Spark
# started, some only as "cannot reach a Kafka broker" when none answered)
BAD_INGEST_ARGUMENTS = [
    (["--table", "db.t.x"], "--table: invalid table name 't.x'"),
    (["--table", "d/b.t"], "--table: invalid database name 'd/b'"),
    (["--table", "db.t", "--bucket", "0"], "--bucket 0: must be a positive bucket count"),
    (["--table", "db.t", "--option", "bucket=x"], "invalid value 'x' for table option 'bucket'"),
    (["--table", "db.t", "--option", "deletion-vector.enabled=true"], "did you mean 'deletion-vectors.enabled'"),
    (["--table", "db.t", "--format", "avro"], "format avro needs the writer schema (--avro-schema FILE"),
    (["--table", "db.t", "--format", "avro", "--avro-schema", "{tmp}/nope.avsc"], "nope.avsc"),
    (["--table", "db.t", "--format", "avro", "--avro-schema", "{tmp}/bad.avsc"], "--avro-schema {tmp}/bad.avsc is not"),
    (["--table", "db.t", "--format", "debezium-avro"], "format debezium-avro needs the schema registry"),
    (["--table", "db.t", "--key-format", "avro"], "Avro keys need the schema registry"),
    (["--table", "db.t", "--primary-key", "a", "--primary-key", "b", "--key-format", "string"],
     "composite primary key ['a', 'b'] needs JSON keys (--key-format json)"),
    (["--table", "db.t", "--on-error", "dead-letter", "--dead-letter-table", "db.d.x"],
     "--dead-letter-table: invalid table name 'd.x'"),
    (["--table", "db.t", "--dead-letter-table", "db.d"], "--dead-letter-table goes with --on-error dead-letter"),
    (["--table", "db.t", "--trigger", "fast"], "--trigger must be an interval"),
    (["--table", "db.t", "--starting-offsets", "first"], "startingOffsets must be 'earliest', 'latest' or JSON"),
    (["--table", "db.t", "--max-offsets-per-trigger", "0"], "maxOffsetsPerTrigger must be an integer >= 1, got '0'"),
    (["--table", "db.t", "--format", "json", "--decimal-handling", "string", "--server-time-zone", "UTC"],
     "a server time zone is for canal-json"),
    (["--table", "db.t", "--format", "canal-json", "--server-time-zone", "Mars/Base"],
     "--server-time-zone: unknown time zone 'Mars/Base'"),
    (["--table", "db.t", "--format", "maxwell-json", "--source-table", "(("], "--source-table '((' is not a regular"),
    (["--database", "a.b", "--format", "maxwell-json"], "--database: invalid database name 'a.b'"),
    (["--database", "ods", "--format", "maxwell-json", "--table-prefix", "x/"], "--table-prefix/--table-suffix: "),
    (["--database", "ods", "--format", "maxwell-json", "--excluding-tables", "(("], "--excluding-tables '((' is not"),
]


def test_ingest_refuses_bad_arguments_before_spark_or_a_broker(tmp_path):
    """Each bad argument of BAD_INGEST_ARGUMENTS exits 1 naming it, with pyspark and kafka-python
    unimportable: nothing started Spark or asked a broker."""
    (tmp_path / "bad.avsc").write_text("{not json")
    cases = [([a.format(tmp=tmp_path) for a in args], error.format(tmp=tmp_path)) for args, error in BAD_INGEST_ARGUMENTS]
    code = ("import contextlib, io, json, sys\n"
            "sys.modules['pyspark'] = sys.modules['kafka'] = None  # importing either fails\n"
            "from paimon_streaming.cli import main\n"
            "out = []\n"
            "for args in json.loads(sys.argv[1]):\n"
            "    err = io.StringIO()\n"
            "    with contextlib.redirect_stderr(err):\n"
            "        out.append([main(['ingest', '--bootstrap-servers', '127.0.0.1:1', '--topic', 't', '--warehouse', "
            "sys.argv[2], *args]), err.getvalue()])\n"
            "print(json.dumps(out))\n")
    done = subprocess.run([sys.executable, "-c", code, json.dumps([args for args, _ in cases]), str(tmp_path / "wh")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for (args, error), (code, err) in zip(cases, json.loads(done.stdout)):
        assert code == 1 and err.startswith("error: ") and error in err, (args, err)
    assert not (tmp_path / "wh").exists()


def _small_table(tmp_path):
    import paimon_streaming as ps
    table = ps.Catalog(str(tmp_path / "wh")).create_table(
        "demo.t", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())]),
        primary_keys=["id"], options={"bucket": "1"})
    table.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    return table


def test_human_output_of_info_and_compact(tmp_path, capsys):
    table = _small_table(tmp_path)
    assert main(["info", table.path]) == 0
    out = capsys.readouterr().out
    assert "columns:\n  id: BIGINT NOT NULL\n  v: STRING\n" in out and "primary_keys: ['id']" in out
    assert "latest_snapshot: 1" in out and "total_records: 2" in out
    assert main(["compact", table.path, "--full"]) == 0
    assert capsys.readouterr().out == f"compacted {table.ref}: snapshot 2\n"
    assert main(["compact", table.path]) == 0
    assert capsys.readouterr().out == f"compacted {table.ref}: nothing to do\n"  # all files at the top level


def test_malformed_where_and_alter_arguments_exit_1_changing_nothing(tmp_path, capsys):
    table = _small_table(tmp_path)
    assert main(["delete", table.path, "--where", "id", "=", "1", "extra"]) == 1
    assert "--where takes COLUMN OP [VALUE], got 'id = 1 extra'" in capsys.readouterr().err
    # one quoted word: the same refusal, with the words to give instead
    assert main(["delete", table.path, "--where", "id < 1"]) == 1
    assert "got 'id < 1'; give them as separate words: --where id '<' 1" in capsys.readouterr().err
    # --set without '=' was an uncaught argparse.ArgumentTypeError: a traceback, not an error line
    assert main(["alter", table.path, "--add-column", "c INT", "--set", "bucket"]) == 1
    assert "expected KEY=VALUE, got 'bucket'" in capsys.readouterr().err
    assert main(["alter", table.path, "--rename", "=x", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"] == "expected OLD=NEW, got '=x'"
    assert main(["alter", table.path, "--add-column", "c"]) == 1
    assert "--add-column expects 'NAME TYPE [FIRST | AFTER COLUMN]', got 'c'" in capsys.readouterr().err
    import paimon_streaming as ps
    assert ps.Table.open(table.path).schema.id == 0  # no alter committed a schema
    assert ps.Table.open(table.path).latest_snapshot().id == 1


def test_check_repair_prints_what_it_repaired_and_reports_its_failure(tmp_path, capsys):
    table = _small_table(tmp_path)
    with open(f"{table.path}/snapshot/LATEST", "w") as f:
        f.write("garbage")
    assert main(["check", table.path, "--repair"]) == 0
    assert "repaired: " in capsys.readouterr().out
    assert main(["check", table.path]) == 0
    assert "repaired" not in capsys.readouterr().out
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    assert main(["check", str(not_a_dir), "--repair", "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert problems[0]["kind"] == "check-failed" and problems[0]["message"].startswith("--repair failed: ")


def test_remove_orphans_lists_the_files(tmp_path, capsys):
    table = _small_table(tmp_path)
    orphan = f"{table.path}/bucket-0/data-orphan.parquet"
    with open(orphan, "wb") as f:
        f.write(b"x" * 10)
    assert main(["remove-orphans", table.path, "--older-than", "2999-01-01", "--dry-run"]) == 1  # the future
    assert "is in the future" in capsys.readouterr().err
    an_hour_ago = time.time() - 3600
    os.utime(orphan, (an_hour_ago, an_hour_ago))
    assert main(["remove-orphans", table.path, "--older-than",
                 time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(an_hour_ago + 60)), "--dry-run"]) == 0
    assert capsys.readouterr().out == f"{orphan}\nwould remove 1 orphan files (10 bytes) of {table.ref}\n"
    assert os.path.exists(orphan)


def test_table_after_where_terms_and_usage_errors_as_json(tmp_path, capsys):
    """`delete --where id = 1 TABLE` (the table after the options) was refused: --where's terms
    had swallowed it; `is null` may come unquoted; a usage error under --json prints JSON too."""
    table = _small_table(tmp_path)
    table.write_arrow(pa.table({"id": [3], "v": [None]}))
    assert main(["delete", "--where", "v", "IS", "NULL", "--dry-run", "--json", table.path]) == 0
    assert json.loads(capsys.readouterr().out)["matching_rows"] == 1
    assert main(["update", "--set", "v=z", "--where", "id", "IN", "[1, 3]", table.path]) == 0
    assert capsys.readouterr().out.startswith("updated ")
    assert main(["delete", "--where", "v", "is not null", "--where", "id", "<", "2", table.path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["snapshot"] is not None
    assert sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"]) == [{"id": 2, "v": "b"}, {"id": 3, "v": "z"}]
    assert main(["rescale", "--where", "id", ">", "0", table.path, "--dry-run", "--json"]) == 1
    assert table.path not in json.loads(capsys.readouterr().out)["error"]  # the table was found: an error of its own
    assert main(["delete", "--where", "id", "=", "1", "--json"]) == 1  # no table at all
    assert json.loads(capsys.readouterr().out)["error"].startswith("delete needs the table")
    with pytest.raises(SystemExit) as exit_info:  # argparse's own refusal: --where is required
        main(["delete", table.path, "--json"])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert "usage: paimon-streaming delete" in captured.err
    assert json.loads(captured.out) == {"error": "the following arguments are required: --where", "type": "UsageError"}


def test_alter_takes_nested_types_as_it_prints_them(tmp_path, capsys):
    """`alter` printed `tags: ARRAY<INT>` but refused that text as input ("cannot parse Paimon
    type"): no ARRAY, MAP or ROW column could be added or widened from the command line."""
    import paimon_streaming as ps
    table = _small_table(tmp_path)
    assert main(["alter", table.path, "--add-column", "tags ARRAY<INT>",
                 "--add-column", "m MAP<STRING, ARRAY<DECIMAL(10, 2)>>",
                 "--add-column", "addr ROW<zip STRING, `house no` INT NOT NULL COMMENT 'the number'>"]) == 0
    assert main(["alter", table.path, "--type", "tags=ARRAY<BIGINT>"]) == 0
    out = capsys.readouterr().out
    assert "tags: ARRAY<BIGINT>" in out and "m: MAP<STRING NOT NULL, ARRAY<DECIMAL(10, 2)>>" in out
    t = ps.Table.open(table.path)
    addr = t.schema.fields[t.schema.field_names.index("addr")].type
    assert [(f.name, str(f.type), f.description) for f in addr.fields] == [
        ("zip", "STRING", None), ("house no", "INT NOT NULL", "the number")]
    assert len({f.id for f in addr.fields}) == 2 and min(f.id for f in addr.fields) > 0
    for bad in ("x ARRAY<INT", "x ROW<>", "x MAP<INT>"):
        assert main(["alter", table.path, "--add-column", bad]) == 1
        assert "cannot parse Paimon type" in capsys.readouterr().err


def test_alter_applies_changes_in_the_order_given_as_javas_schema_manager(tmp_path, capsys):
    """`alter` applied its changes grouped by kind (add, rename, ..., drop, set, unset), not in
    the order given: `--unset k --set k=5` removed k, `--drop-default v --default v=x` left no
    default, and `--drop v --add-column 'v INT'` was refused as adding an existing column."""
    import paimon_streaming as ps
    try:
        from java_oracle import get_oracle, read_schema
    except ImportError:  # pragma: no cover
        from tests.java_oracle import get_oracle, read_schema
    java = get_oracle()
    sequences = {
        "drop-add": (["--drop", "v", "--add-column", "v INT"],
                     [{"kind": "drop", "path": ["v"]}, {"kind": "add", "path": ["v"], "type": "INT"}]),
        "rename-add": (["--rename", "v=w", "--add-column", "v STRING"],
                       [{"kind": "rename", "path": ["v"], "newName": "w"},
                        {"kind": "add", "path": ["v"], "type": "STRING"}]),
        "default-rename": (["--default", "v=x", "--rename", "v=w"],
                           [{"kind": "default", "path": ["v"], "value": "x"},
                            {"kind": "rename", "path": ["v"], "newName": "w"}]),
    }
    fields = [{"name": "id", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING", "defaultValue": "d"}]
    with java.batch() as b:
        for name in sequences:
            for who in ("ours", "java"):
                b.create_table(tmp_path / who / name, fields, primary_keys=["id"],
                               options={"bucket": "1", "snapshot.num-retained.min": "3"})
    with java.batch() as b:
        for name, (_, changes) in sequences.items():
            b.alter(tmp_path / "java" / name, changes)
    for name, (args, _) in sequences.items():
        assert main(["alter", str(tmp_path / "ours" / name), *args]) == 0, capsys.readouterr().err
        capsys.readouterr()
        ours, theirs = (read_schema(tmp_path / who / name) for who in ("ours", "java"))
        assert ours["fields"] == theirs["fields"] and ours["highestFieldId"] == theirs["highestFieldId"], name
    assert [(f["name"], f.get("defaultValue")) for f in ours["fields"]] == [("id", None), ("w", "x")]

    path = str(tmp_path / "ours" / "drop-add")
    assert main(["alter", path, "--unset", "snapshot.num-retained.min", "--set", "snapshot.num-retained.min=5",
                 "--drop-default", "v", "--default", "v=7", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["options"]["snapshot.num-retained.min"] == "5"
    assert ps.Table.open(path).schema.fields[-1].default_value == "7"
    assert main(["alter", path, "--set", "snapshot.num-retained.min=6", "--unset", "snapshot.num-retained.min",
                 "--default", "v=8", "--drop-default", "v", "--comment", "a", "--comment", "b"]) == 0
    schema = ps.Table.open(path).schema
    assert "snapshot.num-retained.min" not in schema.options and schema.fields[-1].default_value is None
    assert schema.comment == "b"


def test_where_takes_the_number_texts_set_takes(tmp_path, capsys):
    """`--where id = 007` (or `+5`, `.5`) was refused as "does not compare with column 'id'
    (BIGINT)" while `--set n=007` took it: JSON has no such numbers, and the text was compared."""
    import paimon_streaming as ps
    table = ps.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", pa.schema([pa.field("id", pa.int64(), False), ("f", pa.float32()), ("d", pa.decimal128(5, 2)),
                           ("s", pa.string())]), primary_keys=["id"], options={"bucket": "1"})
    table.write_arrow(pa.table({"id": pa.array([0, 5, 7], pa.int64()), "f": pa.array([0.5, 5.0, -1.0], pa.float32()),
                                "d": pa.array([decimal.Decimal("0.50"), decimal.Decimal(5), decimal.Decimal(7)],
                                              pa.decimal128(5, 2)), "s": ["007", "+5", ".5"]}))
    for where, matching in ((["id", "=", "007"], 1), (["id", "=", "+5"], 1), (["id", "<", ".5"], 1),
                            (["id", ">=", "5."], 2), (["id", "in", "[5, 7]"], 2), (["f", "=", ".5"], 1),
                            (["f", "<", "+inf"], 3), (["d", "=", "00.5"], 1), (["d", ">", "+5"], 1),
                            (["s", "=", "007"], 1), (["s", "=", ".5"], 1), (["id", "=", '"7"'], None)):
        code = main(["delete", table.path, "--where", *where, "--dry-run", "--json"])
        out = capsys.readouterr()
        if matching is None:  # a JSON string stays text
            assert code == 1 and "does not compare with column 'id' (BIGINT)" in out.err
        else:
            assert code == 0 and json.loads(out.out)["matching_rows"] == matching, (where, out)
    assert main(["update", table.path, "--where", "id", "=", "+7", "--set", "f=+7", "--set", "d=007"]) == 0
    assert table.to_arrow().filter(pa.compute.field("id") == 7).to_pylist() == [
        {"id": 7, "f": 7.0, "d": decimal.Decimal("7.00"), "s": ".5"}]


def test_timestamp_ltz_text_without_an_offset_is_utc_as_help_says(tmp_path, capsys):
    """`--where` / `--set` text without an offset for a TIMESTAMP WITH LOCAL TIME ZONE column is
    UTC (as the Python API takes it), while --older-than reads local time: `--help` said neither."""
    import datetime as dt

    import paimon_streaming as ps
    ltz = pa.timestamp("us", tz="UTC")
    table = ps.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", pa.schema([pa.field("id", pa.int64(), False), ("ts", ltz)]), primary_keys=["id"],
        options={"bucket": "1"})
    table.write_arrow(pa.table({"id": [1], "ts": pa.array([dt.datetime(2024, 1, 1, 10, tzinfo=dt.timezone.utc)], ltz)}))
    for text in ("2024-01-01 10:00:00", "2024-01-01 12:00:00+02:00"):
        assert main(["delete", table.path, "--where", "ts", "=", text, "--dry-run", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["matching_rows"] == 1
    for command, options in (("delete", ["--where"]), ("update", ["--where", "--set"]), ("rescale", ["--where"])):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        described = " ".join(capsys.readouterr().out.split()).split("options:")[1]
        for option in options:
            text = described[described.index(f"{option} "):].split("--dry-run")[0]
            assert "TIME ZONE value without an offset is UTC" in text, (command, option)
