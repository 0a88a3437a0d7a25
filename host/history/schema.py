# SPDX-License-Identifier: BSD-2-Clause
"""The history's schema, as numbered migrations.

Each migration is applied once, in order, and recorded in ``schema_migrations``
(version, description, when). A file's schema version is the highest recorded; an
older file is brought up to :data:`SCHEMA_VERSION` when it is opened, inside one
transaction, and a file whose version is higher than this rtrig knows is refused
(it would be misread). The table ``rtrig_history`` marks a database as an rtrig
history: an SQLite file or a PostgreSQL schema with tables but without it is foreign
and refused.

The statements are written once for both dialects; ``{id}`` is the dialect's
auto-numbered primary key and ``{blob}`` its text type for JSON documents.
"""

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "FORMAT", "ddl"]

#: The value of ``rtrig_history.format``: what marks a database as a history.
FORMAT = "rtrig-history"

#: (version, description, statements). Never edit a released migration: add one.
MIGRATIONS = [
    (1, "runs, set-up, labels and figures", [
        "CREATE TABLE rtrig_history (format TEXT NOT NULL)",
        "CREATE TABLE runs ("
        " id {id},"
        " recorded_at TEXT NOT NULL,"     # UTC, ISO 8601, to the microsecond
        " kind TEXT NOT NULL,"            # capture | statistics | sweep | suite | cyclictest
        " source TEXT NOT NULL,"          # the file recorded, or the test
        " board TEXT NOT NULL,"           # the rig's board, "sim" for the twin
        " target TEXT NOT NULL,"          # target kind and preset
        " settings {blob} NOT NULL,"      # JSON: what the run measured
        " status TEXT NOT NULL)",
        "CREATE TABLE labels ("
        " run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
        " key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (run_id, key))",
        "CREATE TABLE figures ("
        " run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
        " name TEXT NOT NULL,"            # channel.figure: isr.p99, mf_isr, suite.yield.max
        " value DOUBLE PRECISION, lo DOUBLE PRECISION, hi DOUBLE PRECISION,"
        " unit TEXT NOT NULL, PRIMARY KEY (run_id, name))",
    ]),
    (2, "samples per channel (value counts) for step verdicts; look-up indexes", [
        "CREATE TABLE samples ("
        " run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
        " channel TEXT NOT NULL, data {blob} NOT NULL, PRIMARY KEY (run_id, channel))",
        "CREATE INDEX figures_by_name ON figures (name, run_id)",
        "CREATE INDEX labels_by_key ON labels (key, value, run_id)",
    ]),
]

SCHEMA_VERSION = MIGRATIONS[-1][0]

_DIALECT = {
    "sqlite": {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "blob": "TEXT"},
    "postgresql": {"id": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "blob": "TEXT"},
}


def ddl(statement, dialect):
    """``statement`` in ``dialect`` (``sqlite`` or ``postgresql``)."""
    return statement.format(**_DIALECT[dialect])
