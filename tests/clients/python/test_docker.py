"""docker/ without a Docker engine. The Dockerfile and compose.yaml are read
(not copied here), checked for what a build would need — the files they
copy, a Rust new enough for the workspace, a non-root runtime user, the
warehouse in the bucket minio-init creates — and then the compose
`lakegres` service is run as its container would run: the Dockerfile's ENV
and the service's environment, the service's entrypoint as compose splits
it, `lakegres` on PATH, /data a temporary folder; MinIO is moto's S3 (with
the bucket minio-init makes) and the listen addresses are loopback. The
image's HEALTHCHECK command then runs as written, a client logs in with
the compose password (SCRAM) and writes a table, which is in the bucket
under the warehouse and readable by the `deltalake` package."""

import json
import os
import pathlib
import re
import shlex
import subprocess
import threading
import time
import tomllib

import boto3
import deltalake
import pg8000.dbapi
import psycopg
import pytest
import yaml

from conftest import ROOT, server_binary
from moto_s3 import Moto

DOCKER = ROOT / "docker"
DOCKERFILE = DOCKER / "Dockerfile"
COMPOSE = DOCKER / "compose.yaml"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


# ---------------------------------------------------------------- parsing

def dockerfile_stages(path=DOCKERFILE):
    """The Dockerfile's stages: [{"from": ..., "name": ..., "instructions":
    [(KEYWORD, rest)]}], comments dropped and continued lines joined."""
    lines, pending = [], ""
    for raw in path.read_text().splitlines():
        if raw.strip().startswith("#"):
            continue
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        lines.append(pending + raw)
        pending = ""
    assert not pending.strip(), "the Dockerfile ends in a continued line"
    stages = []
    for line in lines:
        if not line.strip():
            continue
        keyword, _, rest = line.strip().partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "FROM":
            m = re.fullmatch(r"(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
            assert m, line
            stages.append({"from": m.group(1), "name": m.group(2), "instructions": []})
        else:
            assert stages, f"{keyword} before FROM"
            stages[-1]["instructions"].append((keyword, rest))
    return stages


def instructions(stage, keyword):
    return [rest for k, rest in stage["instructions"] if k == keyword]


def dockerfile_env(stage):
    """ENV key=value pairs (quotes as the shell reads them)."""
    env = {}
    for rest in instructions(stage, "ENV"):
        for word in shlex.split(rest):
            key, eq, value = word.partition("=")
            assert eq, f"ENV {rest}: only the key=value form is read here"
            env[key] = value
    return env


def healthcheck(stage):
    """(options, argv) of the stage's HEALTHCHECK (exec form)."""
    [rest] = instructions(stage, "HEALTHCHECK")
    options, _, command = rest.partition(" CMD ")
    return dict(re.findall(r"--([\w-]+)=(\S+)", options)), json.loads(command)


def copies(stage):
    """COPY lines as (flags, sources, destination)."""
    out = []
    for rest in instructions(stage, "COPY"):
        words = shlex.split(rest)
        flags = dict(w[2:].split("=", 1) for w in words if w.startswith("--"))
        paths = [w for w in words if not w.startswith("--")]
        out.append((flags, paths[:-1], paths[-1]))
    return out


def go_shellwords(line):
    """Splits a string as compose does for `entrypoint` and `command`
    (github.com/mattn/go-shellwords, Parse): a backslash escapes the next
    character everywhere but in single quotes, also inside double quotes."""
    args, buf, got = [], "", False
    escaped = single = double = False
    for ch in line:
        if escaped:
            buf, escaped, got = buf + ch, False, True
            continue
        if ch == "\\" and not single:
            escaped = True
            continue
        if ch in " \t\r\n" and not (single or double):
            if got:
                args.append(buf)
                buf, got = "", False
            continue
        if ch == '"' and not single:
            double, got = not double, True
            continue
        if ch == "'" and not double:
            single, got = not single, True
            continue
        assert single or double or ch not in ";&|<>`", f"compose stops a command at {ch!r}: {line!r}"
        buf, got = buf + ch, True
    assert not (escaped or single or double), f"unbalanced quotes: {line!r}"
    if got:
        args.append(buf)
    return args


def compose_interpolate(value: str) -> str:
    """Compose's interpolation of a value with no variables from the host:
    `$$` is a literal `$`; a lone `$` would be filled from the host's
    environment at `docker compose up`, which these files must not rely on."""
    assert "$" not in value.replace("$$", ""), f"host variable in {value!r}"
    return value.replace("$$", "$")


def compose_command(value):
    """The argv of an `entrypoint` / `command` as compose makes it."""
    if isinstance(value, str):
        return [compose_interpolate(a) for a in go_shellwords(value)]
    return [compose_interpolate(str(a)) for a in value]


def compose_environment(service):
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: compose_interpolate(str(v)) for k, v in env.items()}


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def files():
    stages = dockerfile_stages()
    compose = yaml.safe_load(COMPOSE.read_text())
    return {"build": stages[0], "runtime": stages[-1], "stages": stages, "compose": compose,
            "services": compose["services"]}


# ---------------------------------------------------------------- static checks

def test_go_shellwords_port():
    # The cases that matter for compose files: quotes, and the backslash
    # that go-shellwords (unlike sh) takes as an escape in double quotes.
    assert go_shellwords('bash -c "a \\"b\\" c"') == ["bash", "-c", 'a "b" c']
    assert go_shellwords("sh -c 'x \\n y'") == ["sh", "-c", "x \\n y"]
    assert go_shellwords('sh -c "printf \'%s\\n\'"') == ["sh", "-c", "printf '%sn'"]
    assert go_shellwords("a  ''  b\n") == ["a", "", "b"]


def test_two_stages_build_the_workspace_binary(files):
    build, runtime = files["build"], files["runtime"]
    assert len(files["stages"]) == 2 and build["name"], files["stages"]
    # The builder's Rust is at least the workspace's rust-version (and the
    # toolchain file's channel, if there is one).
    m = re.fullmatch(r"rust:(\d+)\.(\d+)(?:\.(\d+))?-(\w+)", build["from"])
    assert m, build["from"]
    image_rust = tuple(int(x or 0) for x in m.group(1, 2, 3))
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
    needed = [cargo["workspace"]["package"]["rust-version"]]
    for name in ["rust-toolchain.toml", "rust-toolchain"]:
        if (ROOT / name).exists():
            text = (ROOT / name).read_text()
            channel = tomllib.loads(text)["toolchain"]["channel"] if name.endswith(".toml") else text.strip()
            needed.append(channel)
    for version in needed:
        if re.fullmatch(r"\d+\.\d+(\.\d+)?", version):
            want = tuple(int(x) for x in (version.split(".") + ["0"])[:3])
            assert image_rust >= want, f"{build['from']} is older than Rust {version}"
    # The runtime is the same Debian release (the binary links its glibc).
    assert runtime["from"] == f"debian:{m.group(4)}-slim", (build["from"], runtime["from"])

    # cargo build -p PACKAGE in WORKDIR; the runtime copies that binary.
    [workdir] = instructions(build, "WORKDIR")
    [run] = [r for r in instructions(build, "RUN") if "cargo build" in r]
    package = re.search(r"-p\s+(\S+)", run).group(1)
    assert "--release" in run
    manifests = [tomllib.loads(p.read_text()) for p in ROOT.glob("crates/*/Cargo.toml")]
    assert package in [m["package"]["name"] for m in manifests], package
    [(flags, [binary], dest)] = [c for c in copies(runtime) if c[0].get("from")]
    assert flags["from"] == build["name"]
    assert binary == f"{workdir}/target/release/{package}", binary
    assert json.loads(instructions(runtime, "ENTRYPOINT")[0]) == [dest]
    assert instructions(build, "COPY") == [". ."]


def test_copied_files_exist_and_the_config_is_the_one_read(files):
    runtime = files["runtime"]
    env = dockerfile_env(runtime)
    local = [(sources, dest) for flags, sources, dest in copies(runtime) if not flags.get("from")]
    assert local, "the runtime stage copies no file from the context"
    for sources, dest in local:
        for source in sources:
            assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    assert env["LAKEGRES_CONFIG"] in [dest for _, dest in local]
    # The copied file parses as the server's configuration (the test below
    # starts the server with it).


def ignored_by(patterns):
    """Docker's .dockerignore matching: a path is left out when the last
    pattern matching it or one of its parent folders is not a `!` one."""
    rules = []
    for line in patterns.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keep, line = line.startswith("!"), line.lstrip("!").strip("/")
        regex = "".join(".*" if part == "**" else re.escape(part).replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
                        for part in re.split(r"(\*\*)", line))
        rules.append((keep, re.compile(regex)))

    def ignored(path: str) -> bool:
        parts = path.split("/")
        prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        out = False
        for keep, regex in rules:
            if any(regex.fullmatch(p) for p in prefixes):
                out = not keep
        return out
    return ignored


def test_the_build_context_is_what_cargo_needs(files):
    ignored = ignored_by((DOCKER / "Dockerfile.dockerignore").read_text())
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    needed = [p for p in tracked if p.startswith("crates/") or p in ("Cargo.toml", "Cargo.lock")]
    needed += [s for flags, sources, _ in copies(files["runtime"]) if not flags.get("from") for s in sources]
    assert len(needed) > 10 and not [p for p in needed if ignored(p)]
    for left_out in ["target/release/lakegres", ".venv/bin/python", ".git/HEAD", "lakegres-data/default/t",
                     "tests/clients/node/node_modules/pg/package.json", "crates/lakegres/target/debug/x"]:
        assert ignored(left_out), left_out


def test_runtime_runs_as_an_unprivileged_user_owning_its_workdir(files):
    runtime = files["runtime"]
    [user] = instructions(runtime, "USER")
    assert user not in ("root", "0") and not user.startswith(("root:", "0:")), user
    [workdir] = instructions(runtime, "WORKDIR")
    runs = " ".join(instructions(runtime, "RUN"))
    m = re.search(r"useradd\s+(.*?)\s" + re.escape(user) + r"(\s|$)", runs)
    assert m, f"USER {user} is not created by useradd"
    uid = re.search(r"--uid\s+(\d+)", m.group(1))
    assert uid and int(uid.group(1)) != 0
    assert re.search(rf"chown\s+{re.escape(user)}(:{re.escape(user)})?\s+{re.escape(workdir)}(\s|$)", runs), \
        f"{workdir} is not given to {user}"
    assert instructions(runtime, "VOLUME") == [workdir]
    # Everything the server writes locally is under the workdir.
    assert dockerfile_env(runtime)["LAKEGRES_USERS_FILE"].startswith(workdir + "/")


def test_ports_healthcheck_and_auth_agree(files):
    runtime = files["runtime"]
    env = dockerfile_env(runtime)
    pg_port, http_port = port_of(env["LAKEGRES_LISTEN"]), port_of(env["LAKEGRES_HTTP_LISTEN"])
    assert sorted(instructions(runtime, "EXPOSE")[0].split()) == sorted([str(pg_port), str(http_port)])
    options, argv = healthcheck(runtime)
    assert set(options) <= {"interval", "timeout", "start-period", "start-interval", "retries"}, options
    assert f"/dev/tcp/127.0.0.1/{http_port}" in " ".join(argv)
    # Not listening on loopback: logins are by password (SCRAM), stated
    # outright rather than left to the listen address.
    assert env.get("LAKEGRES_AUTH") == "scram-sha-256"
    service = files["services"]["lakegres"]
    published = {int(p.rsplit(":", 1)[1]): p for p in service["ports"]}
    assert set(published) == {pg_port, http_port}
    assert all(p.startswith("127.0.0.1:") for p in published.values()), published


def test_every_lakegres_variable_is_read(files):
    """A LAKEGRES_* name in the files is a flag's variable (`lakegres --help`
    lists them) or one the service's entrypoint uses itself."""
    help_text = subprocess.run([server_binary(), "--help"], capture_output=True, text=True, check=True).stdout
    read = set(re.findall(r"\[env: (LAKEGRES_\w+)=", help_text))
    assert "LAKEGRES_LISTEN" in read, help_text
    service = files["services"]["lakegres"]
    script = " ".join(compose_command(service["entrypoint"]))
    names = set(dockerfile_env(files["runtime"])) | set(compose_environment(service))
    for name in sorted(n for n in names if n.startswith("LAKEGRES_")):
        assert name in read or f"${name}" in script, f"{name} is read by nothing"


def minio_setup(files):
    """(endpoint URL, bucket, (user, password)) that minio-init sets up."""
    services = files["services"]
    init = services["minio-init"]
    script = " ".join(compose_command(init["entrypoint"]))
    alias = re.search(r"mc alias set (\S+) (\S+) (\S+) (\S+)", script)
    assert alias, script
    name, url, user, password = alias.groups()
    bucket = re.search(rf"mc mb (?:--\S+ )*{re.escape(name)}/([\w.-]+)", script)
    assert bucket, script
    init_env = compose_environment(init)
    resolve = lambda word: init_env[word[1:]] if word.startswith("$") else word  # noqa: E731
    return url, bucket.group(1), (resolve(user), resolve(password))


def test_the_warehouse_is_in_the_bucket_minio_init_makes(files):
    services = files["services"]
    service = services["lakegres"]
    env = compose_environment(service)
    url, bucket, (user, password) = minio_setup(files)
    assert env["LAKEGRES_WAREHOUSE"].startswith(f"s3://{bucket}/"), (env["LAKEGRES_WAREHOUSE"], bucket)
    assert env["LAKEGRES_STORAGE_ENDPOINT"] == url
    host, port = re.fullmatch(r"http://([\w-]+):(\d+)", url).groups()
    assert host in services and host != "lakegres"
    # MinIO's API port (the command line's --address, 9000 by default).
    command = compose_command(services[host]["command"])
    address = command[command.index("--address") + 1] if "--address" in command else ":9000"
    assert port_of(address) == int(port)
    assert (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]) == (user, password)
    assert env["LAKEGRES_STORAGE_ALLOW_HTTP"] == "true"
    # Start order: MinIO healthy, then the bucket, then Lakegres.
    assert service["depends_on"]["minio-init"]["condition"] == "service_completed_successfully"
    assert services["minio-init"]["depends_on"][host]["condition"] == "service_healthy"
    # The image built is the Dockerfile read here, from the repository root.
    build = service["build"]
    assert (COMPOSE.parent / build["context"]).resolve() == ROOT
    assert (ROOT / build["dockerfile"]).resolve() == DOCKERFILE.resolve()


# ---------------------------------------------------------------- the service, run

@pytest.fixture(scope="module")
def service(files, tmp_path_factory):
    """The compose lakegres service, running as its container would."""
    runtime = files["runtime"]
    compose_service = files["services"]["lakegres"]
    _, bucket, _ = minio_setup(files)
    moto = Moto(bucket)  # creates the bucket, as minio-init does
    folder = tmp_path_factory.mktemp("docker")
    data, bin_dir = folder / "data", folder / "bin"
    data.mkdir()
    bin_dir.mkdir()
    [workdir] = instructions(runtime, "WORKDIR")
    # The image's paths: the binary and the files copied from the repository.
    (bin_dir / "lakegres").symlink_to(os.path.abspath(server_binary()))
    copied = {dest: ROOT / sources[0] for flags, sources, dest in copies(runtime) if not flags.get("from")}

    def local(value: str) -> str:
        if value in copied:
            return str(copied[value])
        if value == workdir or value.startswith(workdir + "/"):
            return str(data) + value[len(workdir):]
        return value

    env = {**dockerfile_env(runtime), **compose_environment(compose_service)}
    container_env = dict(env)
    env = {k: local(v) for k, v in env.items()}
    assert env["LAKEGRES_STORAGE_ENDPOINT"] == minio_setup(files)[0]
    env["LAKEGRES_STORAGE_ENDPOINT"] = moto.endpoint
    # Loopback only, on free ports (read back from the log).
    env["LAKEGRES_LISTEN"] = "127.0.0.1:0"
    env["LAKEGRES_HTTP_LISTEN"] = "127.0.0.1:0"
    env["PATH"] = f"{bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    env["HOME"] = str(data)

    argv = compose_command(compose_service["entrypoint"])
    assert argv[0] == "bash", argv
    proc = subprocess.Popen(argv, env=env, cwd=data, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log, ports = [], {}
    for line in proc.stderr:
        line = ANSI.sub("", line)
        log.append(line)
        if m := re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", line):
            ports["http"] = int(m.group(1))
        if m := re.search(r"listening on 127\.0\.0\.1:(\d+),", line):
            ports["pg"] = int(m.group(1))
            break
    if "pg" not in ports:
        proc.wait(timeout=30)
        moto.stop()
        pytest.fail("the service did not start:\n" + "".join(log))
    threading.Thread(target=lambda: [log.append(ANSI.sub("", line)) for line in proc.stderr], daemon=True).start()
    yield {"proc": proc, "env": env, "container_env": container_env, "log": log, "moto": moto,
           "data": data, "bucket": bucket, **ports}
    if proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=30)
    moto.stop()


def run_healthcheck(files, service, port):
    options, argv = healthcheck(files["runtime"])
    http_port = port_of(dockerfile_env(files["runtime"])["LAKEGRES_HTTP_LISTEN"])
    needle = f"/dev/tcp/127.0.0.1/{http_port}"
    assert sum(a.count(needle) for a in argv) == 1, argv
    argv = [a.replace(needle, f"/dev/tcp/127.0.0.1/{port}") for a in argv]
    timeout = float(options.get("timeout", "30s").rstrip("s"))
    return subprocess.run(argv, env=service["env"], cwd=service["data"], capture_output=True, text=True,
                          timeout=timeout)


def dsn(files, service, password=None):
    env = compose_environment(files["services"]["lakegres"])
    return (f"host=127.0.0.1 port={service['pg']} dbname=lakegres user={env['LAKEGRES_USER']} "
            f"password='{password or env['LAKEGRES_PASSWORD']}' require_auth=scram-sha-256")


def test_entrypoint_writes_a_verifier_and_serves_with_scram(files, service):
    env = compose_environment(files["services"]["lakegres"])
    users_file = pathlib.Path(service["env"]["LAKEGRES_USERS_FILE"])
    assert users_file.parent == service["data"]
    text = users_file.read_text()
    assert env["LAKEGRES_PASSWORD"] not in text.split("=", 1)[1]
    assert re.fullmatch(rf'{env["LAKEGRES_USER"]} = "SCRAM-SHA-256\$4096:[^"]+"\n', text), text
    log = "".join(service["log"])
    assert re.search(r"authentication method=ScramSha256 users=1 ", log), log
    assert f"warehouse {service['container_env']['LAKEGRES_WAREHOUSE'].rstrip('/')}/" in log, log


def test_healthcheck_passes_while_serving(files, service):
    out = run_healthcheck(files, service, service["http"])
    assert out.returncode == 0, out.stdout + out.stderr


def test_login_write_and_read_back_from_the_bucket(files, service):
    with psycopg.connect(dsn(files, service), autocommit=True) as conn:
        conn.execute("CREATE SCHEMA compose")
        conn.execute("CREATE TABLE compose.docker_check (id INT, name STRING)")
        conn.execute("INSERT INTO compose.docker_check VALUES (1, 'minio'), (2, 'lakegres')")
        rows = conn.execute("SELECT id, name FROM compose.docker_check ORDER BY id").fetchall()
    assert rows == [(1, "minio"), (2, "lakegres")]

    env = service["env"]
    warehouse = service["container_env"]["LAKEGRES_WAREHOUSE"].rstrip("/")
    prefix = warehouse.removeprefix(f"s3://{service['bucket']}/")
    s3 = boto3.client("s3", endpoint_url=env["LAKEGRES_STORAGE_ENDPOINT"], region_name=env["LAKEGRES_STORAGE_REGION"],
                      aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
    table_prefix = f"{prefix}/compose/docker_check/"
    listed = s3.list_objects_v2(Bucket=service["bucket"], Prefix=table_prefix).get("Contents", [])
    keys = sorted(o["Key"][len(table_prefix):] for o in listed)
    assert [k for k in keys if k.startswith("_delta_log/") and k.endswith(".json")] == [
        "_delta_log/00000000000000000000.json", "_delta_log/00000000000000000001.json"], keys
    assert len([k for k in keys if k.endswith(".parquet")]) == 1, keys
    # Nothing went to the local /data but the users file: the compose
    # environment moved the image's local warehouse to the bucket.
    assert sorted(p.name for p in service["data"].iterdir()) == ["users.toml"]

    options = {"AWS_ENDPOINT_URL": env["LAKEGRES_STORAGE_ENDPOINT"], "AWS_REGION": env["LAKEGRES_STORAGE_REGION"],
               "AWS_ACCESS_KEY_ID": env["AWS_ACCESS_KEY_ID"], "AWS_SECRET_ACCESS_KEY": env["AWS_SECRET_ACCESS_KEY"],
               "AWS_ALLOW_HTTP": env["LAKEGRES_STORAGE_ALLOW_HTTP"]}
    table = deltalake.DeltaTable(f"{warehouse}/compose/docker_check", storage_options=options)
    assert table.version() == 1
    assert sorted(tuple(r.values()) for r in table.to_pyarrow_table().to_pylist()) == rows


def test_a_wrong_password_gets_28P01(files, service):
    env = compose_environment(files["services"]["lakegres"])
    with pytest.raises(pg8000.dbapi.DatabaseError) as failed:
        pg8000.dbapi.connect(host="127.0.0.1", port=service["pg"], database="lakegres",
                             user=env["LAKEGRES_USER"], password=env["LAKEGRES_PASSWORD"] + "x")
    assert failed.value.args[0]["C"] == "28P01", failed.value.args
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(dsn(files, service, password="wrong"))


def test_healthcheck_fails_once_the_server_is_gone(files, service):
    # Last: stops the service. SIGTERM reaches lakegres itself (the
    # entrypoint execs it), as `docker stop` would.
    service["proc"].terminate()
    assert service["proc"].wait(timeout=30) == 0
    out = run_healthcheck(files, service, service["http"])
    assert out.returncode != 0
    deadline = time.monotonic() + 5
    while not any("lakegres stopped" in line for line in service["log"]):
        assert time.monotonic() < deadline, "".join(service["log"])
        time.sleep(0.05)
