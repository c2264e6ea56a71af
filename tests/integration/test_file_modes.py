"""instance/ holds prompts, transcripts and the secret key: the folder is owner-only (0700), the database, its WAL
files and the key are 0600, when created and, for files an older version left readable, from the next start."""

import os
import stat

from app import create_app
from tests.database import Database


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def start(instance):
    return create_app({"DATABASE": str(instance / "toolgate.db")}, instance_path=str(instance))


def test_a_new_instance_is_owner_only(tmp_path):
    instance = tmp_path / "instance"
    app = start(instance)
    app.test_client().put("/api/agents/kept", json={"label": "Kept"})
    connection = Database(app.config["DATABASE_URL"])  # holds the WAL files open
    try:
        assert mode(instance) == 0o700
        for name in ("toolgate.db", "toolgate.db-wal", "toolgate.db-shm", "secret_key"):
            assert mode(instance / name) == 0o600, name
    finally:
        connection.close()


def test_files_an_older_version_left_readable_are_tightened_at_start_up(tmp_path):
    instance = tmp_path / "instance"
    start(instance)
    os.chmod(instance, 0o755)
    for name in ("toolgate.db", "secret_key"):
        os.chmod(instance / name, 0o644)
    running = Database(str(instance / "toolgate.db"))  # another process, with the WAL files open
    try:
        running.execute("CREATE TABLE notes (text TEXT)")
        running["notes"].insert({"text": "written"})
        os.chmod(instance / "toolgate.db-wal", 0o664)

        start(instance)

        assert mode(instance) == 0o700
        for name in ("toolgate.db", "toolgate.db-wal", "secret_key"):
            assert mode(instance / name) == 0o600, name
    finally:
        running.close()


def test_a_database_kept_outside_the_instance_folder_is_owner_only_too(tmp_path):
    elsewhere = tmp_path / "data" / "toolgate.db"
    elsewhere.parent.mkdir()
    create_app({"DATABASE": str(elsewhere)}, instance_path=str(tmp_path / "instance"))
    assert mode(elsewhere) == 0o600
