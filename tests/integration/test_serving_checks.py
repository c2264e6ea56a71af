"""`make run HOST=…` first runs `flask check-host HOST`: serving on an address other machines reach needs the
login, and the refusal says how to turn it on. `flask hash-password` makes the hash TOOLGATE_ADMIN_PASSWORD_HASH
takes."""

import pytest
from werkzeug.security import check_password_hash

from tests.bad_input_support import assert_cli_refused
from tests.support import make_app


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "toolgate.example.org"])
def test_a_reachable_address_without_a_password_is_refused_with_how_to_set_one(runner, host):
    assert_cli_refused(
        runner.invoke(args=["check-host", host]),
        f"Not serving on {host} without a login",
        "TOOLGATE_ADMIN_PASSWORD=",
        f"make run HOST={host}",
        "TOOLGATE_ALLOWED_HOSTS",
    )


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.1.1", "localhost", "::1", "[::1]"])
def test_this_machine_needs_no_password(runner, host):
    assert runner.invoke(args=["check-host", host]).exit_code == 0


def test_with_a_password_any_address_is_served(tmp_path):
    runner = make_app(tmp_path, ADMIN_PASSWORD="a long passphrase").test_cli_runner()
    result = runner.invoke(args=["check-host", "0.0.0.0"])
    assert result.exit_code == 0, result.output


def test_hash_password_prints_a_hash_of_the_password(runner):
    result = runner.invoke(args=["hash-password"], input="a long passphrase\na long passphrase\n")
    assert result.exit_code == 0, result.output
    printed = result.output.strip().splitlines()[-1]
    assert check_password_hash(printed, "a long passphrase")
    assert not check_password_hash(printed, "another")


def test_make_run_checks_the_host_before_anything_else():
    with open("Makefile") as file:
        recipe = file.read().split("\nrun:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert "flask --app app check-host $(HOST)" in recipe[0]
