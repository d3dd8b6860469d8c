"""A hostile theme or a hostile web page against `kb build` and `kb serve` (issue 30): a template is run in
Jinja's sandbox, theme files are read only inside the theme's own directories, and the development
server answers only requests addressed to it and never prints a traceback. Each test here failed on the
kb before these fixes."""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import KB_SCRIPT, REPO, signals_at_default

from kbtools.corpus import Settings
from kbtools.site.serve import Site, make_server

SECRET = "kb-test-secret-7f3a9c"  # what must never reach a published page


def assert_clean(err: str) -> None:
    assert "Traceback" not in err and "KB900" not in err, err


def published(out: Path) -> str:
    """Every byte of the site, as text: what a reader of it could see."""
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in out.rglob("*") if p.is_file())


# ---------------------------------------------------------------- 10. a theme is code: it runs in a sandbox


@pytest.mark.parametrize(
    "payload",
    [
        "{{ self.__init__.__globals__.__builtins__.__import__('os').system('touch MARKER') }}",
        "{{ cycler.__init__.__globals__.os.system('touch MARKER') }}",
        "{{ lipsum.__globals__['os'].system('touch MARKER') }}",
        "{% for c in ''.__class__.__mro__[1].__subclasses__() %}{% endfor %}{{ 'touch MARKER' }}",
    ],
)
def test_a_template_reaching_for_python_runs_no_command_and_is_a_clear_error(kb, tmp_path, payload):
    kb.source()
    marker = tmp_path / "ran"
    attack = payload.replace("MARKER", str(marker))
    kb.write(
        "site/templates/home.html", f'{{% extends "base.html" %}}\n{{% block content %}}\n{attack}\n{{% endblock %}}\n'
    )
    result = kb.run("build", "--no-search")
    assert not marker.exists()
    assert result.exit_code == 2
    assert_clean(result.err)
    assert re.search(r"^kb build: site/templates/home\.html:3: .*unsafe", result.err, re.M), result.err
    assert not (kb.root / "site" / "_build").exists()  # nothing published from a refused theme


def test_a_template_with_a_syntax_error_names_its_file_and_line_and_keeps_the_last_site(kb):
    kb.source()
    assert kb.run("build", "--no-search").exit_code == 0
    before = (kb.root / "site" / "_build" / "index.html").read_text()
    kb.write("site/templates/home.html", '{% extends "base.html" %}\n{% block content %}\n{% if %}\n{% endblock %}\n')
    result = kb.run("build", "--no-search")
    assert result.exit_code == 2
    assert_clean(result.err)
    assert result.err.startswith("kb build: site/templates/home.html:3: "), result.err
    assert (kb.root / "site" / "_build" / "index.html").read_text() == before


def test_a_template_cannot_change_what_kb_hands_it(kb):
    kb.source()
    kb.write(
        "site/templates/home.html",
        '{% extends "base.html" %}{% block content %}{{ types.append(1) }}{{ by_type.clear() }}{% endblock %}\n',
    )
    result = kb.run("build", "--no-search")
    assert result.exit_code == 2
    assert_clean(result.err)
    assert "site/templates/home.html:1: " in result.err


@pytest.mark.parametrize("how", ["include", "extends", "import"])
def test_a_template_cannot_load_a_file_outside_the_theme(kb, tmp_path, how):
    kb.source()
    secret = tmp_path / "outside" / "secret.html"
    secret.parent.mkdir()
    secret.write_text(f"{SECRET}\n")
    (kb.root / "site" / "templates" / "partials").mkdir(parents=True)
    os.symlink(secret, kb.root / "site" / "templates" / "leak.html")
    os.symlink(secret.parent, kb.root / "site" / "templates" / "outside")
    os.symlink("/proc/self/environ", kb.root / "site" / "templates" / "env.html")
    # each name, and what the refusal says about it
    names = {
        "leak.html": "site/templates/leak.html is a link to ",
        "outside/secret.html": "site/templates/outside is a link to ",
        "env.html": "site/templates/env.html is a link to /proc/self/environ",
        "../../outside/secret.html": "no template",
        str(secret): "no template",
    }
    for name, why in names.items():
        statement = f'{{% import "{name}" as x %}}' if how == "import" else f'{{% {how} "{name}" %}}'
        kb.write("site/templates/home.html", statement + "\n")
        result = kb.run("build", "--no-search")
        assert result.exit_code == 2, (name, result.err)
        assert_clean(result.err)
        assert result.err.startswith("kb build: site/templates/home.html:1: "), result.err
        assert name in result.err and why in result.err, result.err
        out = kb.root / "site" / "_build"
        assert not out.exists() or SECRET not in published(out)


def test_a_templates_directory_linked_outside_the_repository_is_not_used(kb, tmp_path):
    kb.source()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "home.html").write_text(f"{SECRET}\n")
    (kb.root / "site").mkdir()
    os.symlink(elsewhere, kb.root / "site" / "templates")
    result = kb.run("build", "--no-search")
    assert result.exit_code == 0, result.err
    assert_clean(result.err)
    assert "warning: " in result.err and "site/templates" in result.err
    out = kb.root / "site" / "_build"
    assert SECRET not in published(out) and 'class="site-header"' in (out / "index.html").read_text()


# ---------------------------------------------------------------- 11. the theme publishes only its own files


def test_a_static_link_to_the_environment_is_not_published(kb, monkeypatch):
    monkeypatch.setenv("KB_TEST_TOKEN", SECRET)
    kb.source()
    (kb.root / "site" / "static").mkdir(parents=True)
    os.symlink("/proc/self/environ", kb.root / "site" / "static" / "env.txt")
    os.symlink("/etc/hostname", kb.root / "site" / "static" / "host.txt")
    result = kb.run("build", "--no-search")
    assert result.exit_code == 0, result.err
    assert_clean(result.err)
    out = kb.root / "site" / "_build"
    assert not (out / "static" / "env.txt").exists() and not (out / "static" / "host.txt").exists()
    assert SECRET not in published(out)
    assert "site/static/env.txt" in result.err and "site/static/host.txt" in result.err
    assert (out / "static" / "style.css").is_file()  # the packaged theme still makes the site


def test_a_static_directory_linked_to_a_private_key_is_not_published(kb, tmp_path):
    kb.source()
    keys = tmp_path / "dot-ssh"
    keys.mkdir()
    (keys / "id_ed25519").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n")
    (kb.root / "site").mkdir()
    os.symlink(keys, kb.root / "site" / "static")
    result = kb.run("build", "--no-search")
    assert result.exit_code == 0, result.err
    assert_clean(result.err)
    out = kb.root / "site" / "_build"
    assert not (out / "static" / "id_ed25519").exists() and SECRET not in published(out)
    assert "site/static" in result.err
    assert (out / "static" / "style.css").read_text() == (REPO / "kbtools/theme/static/style.css").read_text()


def test_a_link_inside_the_theme_is_followed_and_one_into_a_subdirectory_link_loop_is_not(kb):
    kb.source()
    static = kb.root / "site" / "static"
    (static / "img").mkdir(parents=True)
    (static / "img" / "logo.svg").write_text("<svg/>\n")
    os.symlink("img/logo.svg", static / "logo.svg")
    os.symlink(".", static / "img" / "again")  # a loop inside the theme: walked once
    result = kb.run("build", "--no-search")
    assert result.exit_code == 0, result.err
    assert_clean(result.err)
    out = kb.root / "site" / "_build" / "static"
    assert (out / "logo.svg").read_text() == "<svg/>\n" and not (out / "logo.svg").is_symlink()
    assert (out / "img" / "logo.svg").read_text() == "<svg/>\n"


def test_a_fifo_in_the_theme_is_refused_not_waited_on(kb):
    kb.source()
    (kb.root / "site" / "static").mkdir(parents=True)
    (kb.root / "site" / "templates").mkdir(parents=True)
    os.mkfifo(kb.root / "site" / "static" / "pipe.css")
    os.mkfifo(kb.root / "site" / "templates" / "home.html")
    # a subprocess with a timeout: the kb before this fix waited on the FIFO forever
    result = subprocess.run(
        [KB_SCRIPT, "--root", str(kb.root), "build", "--no-search"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert_clean(result.stderr)
    assert "site/static/pipe.css" in result.stderr and "site/templates/home.html" in result.stderr
    out = kb.root / "site" / "_build"
    assert not (out / "static" / "pipe.css").exists() and 'class="site-header"' in (out / "index.html").read_text()


# ---------------------------------------------------------------- 7. kb serve


@pytest.fixture
def server(kb, capsys):
    """The development server in this process on a free port, over a site `kb build` made."""
    kb.source()
    assert kb.run("build", "--no-search").exit_code == 0
    settings = Settings.configured(kb.root)
    site = Site(settings, settings.build_path, search=False, report=print)
    httpd = make_server(site, settings.build_path, "127.0.0.1", 0)
    httpd.daemon_threads = False  # so server_close() waits for every request's thread
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=60)


def get(port: int, path: str, host: str | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest("GET", path, skip_host=host is not None)
        if host is not None:
            connection.putheader("Host", host)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def finish(httpd, capsys) -> str:
    """What the server printed once every request it took has been handled."""
    httpd.shutdown()
    httpd.server_close()  # joins the requests' threads
    return capsys.readouterr().err


def test_serve_answers_a_nul_in_the_path_with_400(server, capsys):
    port = server.server_address[1]
    for path in ("/%00.html", "/static/%00", "/%00/", "/index.html%00"):
        status, body = get(port, path)
        assert status == 400, (path, status)
        assert b"Traceback" not in body
    assert get(port, "/index.html")[0] == 200
    assert_clean(finish(server, capsys))


def test_serve_answers_only_requests_addressed_to_it(server, capsys):
    port = server.server_address[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"LOCALHOST:{port}"):
        assert get(port, "/index.html", host)[0] == 200, host
        assert get(port, "/__kb/version", host)[0] == 200, host
    for host in (
        f"attacker.example:{port}",
        "attacker.example",
        f"localhost.attacker.example:{port}",
        "localhost:1",
        "",
    ):
        status, body = get(port, "/index.html", host)
        assert status in (400, 403), (host, status)
        assert b"Ready to build" not in body and b"site-header" not in body
        assert get(port, "/__kb/version", host)[0] in (400, 403)
    assert_clean(finish(server, capsys))


def test_serve_is_quiet_when_a_client_drops_its_connection(server, capsys, kb):
    big = kb.root / "site" / "_build" / "static" / "big.bin"
    big.write_bytes(b"x" * (64 << 20))  # more than the sockets between us buffer
    port = server.server_address[1]
    reset(start_download(port, "/static/big.bin"))
    assert_clean(finish(server, capsys))


def start_download(port: int, path: str) -> socket.socket:
    """A client that asks for `path` and has read the start of the answer."""
    client = socket.create_connection(("127.0.0.1", port), timeout=30)
    client.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    assert client.recv(64).startswith(b"HTTP/1.0 200")
    return client


def reset(client: socket.socket) -> None:
    """Go away mid-answer, as a closed browser tab does: the connection is reset, not closed in order."""
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()


def socket_inode(client_port: int, server_port: int) -> str | None:
    """The inode of the server's end of one connection, from /proc/net/tcp (Linux)."""
    wanted_local, wanted_remote = f":{server_port:04X}", f":{client_port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(wanted_local) and fields[2].endswith(wanted_remote):
            return fields[9]
    return None


def holds_socket(pid: int, inode: str) -> bool:
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd) == f"socket:[{inode}]":
                return True
        except OSError:
            continue
    return False


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to see the request handled")
def test_ctrl_c_stops_serve_quietly_after_a_client_dropped_its_connection(kb):
    kb.source()
    (kb.root / "site" / "static").mkdir(parents=True)
    (kb.root / "site" / "static" / "big.bin").write_bytes(b"x" * (64 << 20))
    proc = subprocess.Popen(
        [KB_SCRIPT, "serve", "--port", "0", "--no-search"],
        cwd=kb.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=signals_at_default(signal.SIGINT),  # the Ctrl-C below reaches it, however the suite was started
    )
    try:
        assert proc.stdout is not None
        port = None
        for line in proc.stdout:  # ends when kb serve exits
            found = re.search(r"at http://127\.0\.0\.1:(\d+)/", line)
            if found:
                port = int(found.group(1))
                break
        assert port is not None, proc.communicate(timeout=60)
        threading.Thread(target=proc.stdout.read, daemon=True).start()  # never let its output block it
        assert get(port, "/index.html")[0] == 200
        # a client that goes away mid-answer; wait (bounded) until the server has closed its end
        client = start_download(port, "/static/big.bin")
        inode = socket_inode(client.getsockname()[1], port)
        assert inode is not None
        reset(client)
        deadline = time.monotonic() + 60
        while holds_socket(proc.pid, inode) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not holds_socket(proc.pid, inode)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
        assert proc.stderr is not None
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code in (0, 130), err
    assert_clean(err)


def test_serve_does_not_watch_a_theme_directory_that_is_a_link(kb, tmp_path):
    """A committed `site/static -> /` is no theme directory, so kb serve neither publishes nor watches it."""
    kb.source()
    (kb.root / "site").mkdir()
    os.symlink("/", kb.root / "site" / "static")
    (kb.root / "site" / "templates").mkdir()
    settings = Settings.configured(kb.root)
    watched = Site(settings, settings.build_path, search=False, report=print).watched()
    assert kb.root / "site" / "static" not in watched
    assert kb.root / "site" / "templates" in watched and settings.records_path in watched
