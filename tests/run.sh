#!/usr/bin/env bash
# Installs everything the tests need and runs them all:
#   - a virtualenv in .venv with the package (editable), its [spark,kafka,s3,gcs,azure] extras at the
#     newest versions pip resolves (what a user gets), and the test tools (pytest, hypothesis, moto);
#   - the GCS emulator fake-gcs-server, built from its Go module into tests/.gcs-emulator, and the
#     Azure emulator Azurite, installed from npm into tests/.azurite;
#   - the pypaimon oracle in a virtualenv of its own, tests/.venv-oracle (pypaimon 2.1.0 pins
#     pyarrow<20), run as a subprocess by tests/pypaimon_oracle.py;
#   - the Java oracle (tests/java, Apache Paimon's paimon-bundle through Maven), built by
#     tests/java_oracle.py on first use and cached in tests/java/target, and older Paimon
#     releases' writers (tests/java_legacy, one build per version in target-<version>);
#   - Apache Kafka's broker jars and Spark's Kafka connector (tests/kafka/*.xml, through
#     Maven), fetched by tests/kafka_broker.py on first use and cached in tests/kafka/target;
#   - a class-data archive of a Spark driver's classes (tests/spark_support.py), so that the
#     tests' many short-lived drivers start in half the time, in tests/spark/target;
#   - a real HDFS (Hadoop's MiniDFSCluster, tests/hdfs/pom.xml through Maven) and libhdfs.so for
#     pyarrow, compiled with cc from the C sources the hdfs-sys crate vendors (tests/hdfs/Cargo.toml,
#     fetched by cargo: on PATH, else in $CARGO_HOME/bin or ~/.cargo/bin), both cached in tests/hdfs/target.
# The tests run in TEST_WORKERS (default 2) processes (pytest-xdist). Extra arguments go to
# pytest (e.g. `bash tests/run.sh -k interop`, or `-n 0` for one process).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade --upgrade-strategy eager -e ".[test,spark,kafka,s3,gcs,azure]"
.venv/bin/python -m pip check
.venv/bin/python -c "import pyarrow, numpy, fastavro, pyspark; print('tested with: pyarrow', pyarrow.__version__, '| numpy', numpy.__version__, '| fastavro', fastavro.__version__, '| pyspark', pyspark.__version__)"
.venv/bin/python tests/pypaimon_oracle.py --build
.venv/bin/python tests/java_oracle.py --build
.venv/bin/python tests/legacy_java_oracle.py  # older Paimon releases' writers (tests/java_legacy), the ones CI tests
.venv/bin/python tests/gcs_server.py  # builds the GCS emulator (fake-gcs-server) from its Go module
.venv/bin/python tests/azure_server.py  # installs the Azure emulator (Azurite) from npm
.venv/bin/python tests/hdfs_cluster.py  # fetches Hadoop's jars (Maven) and builds libhdfs from the hdfs-sys crate (cargo, cc)
.venv/bin/python tests/spark_support.py --build  # the class-data archive Spark drivers of the tests start from
# Two worker processes (TEST_WORKERS); tests are handed out as workers free up.
exec .venv/bin/python -m pytest -q -n "${TEST_WORKERS:-2}" --dist worksteal tests "$@"
