"""moto's S3 server for the client tests and the benchmarks (bench/objectstore):
tests/it/moto_atomic.py, whose writes are atomic as S3's are, run by this
Python (its venv has moto and boto3)."""

import pathlib
import socket
import subprocess
import sys
import threading

ROOT = pathlib.Path(__file__).resolve().parents[3]


class Moto:
    """moto's S3 (tests/it/moto_atomic.py, as the Rust tests start it) on a
    free loopback port, with one bucket."""

    def __init__(self, bucket: str):
        self.bucket = bucket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        script = ROOT / "crates" / "lakegres" / "tests" / "it" / "moto_atomic.py"
        self.proc = subprocess.Popen([sys.executable, str(script), "127.0.0.1", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            if "Running on" in line:
                break
        else:
            raise RuntimeError("moto did not start")
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()
        self.client.create_bucket(Bucket=self.bucket)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def client(self):
        """boto3's S3 client (moto depends on boto3)."""
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id="test", aws_secret_access_key="test")

    def put(self, key: str, body: bytes):
        self.client.put_object(Bucket=self.bucket, Key=key, Body=body)

    def config(self, folder: pathlib.Path, name: str, extra: str = "", top: str = "") -> pathlib.Path:
        """A server configuration with its warehouse at s3://lake/wh and the
        file roots s3://lake/ingest and `folder` (with bucket `lake`); `top` holds further
        top-level keys, `extra` further sections."""
        config = folder / f"{name}.toml"
        config.write_text(
            f'listen = "127.0.0.1:0"\nwarehouse = "s3://{self.bucket}/wh"\n{top}'
            f'[files]\nroots = ["s3://{self.bucket}/ingest", "{folder}"]\n'
            f'[storage]\nendpoint = "{self.endpoint}"\nregion = "us-east-1"\nallow_http = true\n{extra}')
        return config

    @property
    def storage_options(self) -> dict:
        """For the `deltalake` package."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test",
                "AWS_SECRET_ACCESS_KEY": "test", "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)

