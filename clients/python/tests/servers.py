"""What the integration tests share: the server go test started, and a way
to start one of their own (to stop it and start it again)."""

import os
import socket
import subprocess
import time
import urllib.request

URL = os.environ.get("HECTOR_TEST_URL")
ADMIN_KEY = os.environ.get("HECTOR_TEST_ADMIN_KEY")
ALICE_KEY = os.environ.get("HECTOR_TEST_ALICE_KEY")
BIN = os.environ.get("HECTOR_TEST_BIN")


class HectorServer:
    """`hector serve` on a data directory, no auth, on a free loopback port,
    until the with block ends; a keyword index unless config says otherwise."""

    @staticmethod
    def available() -> bool:
        return bool(BIN)

    def __init__(self, data_dir: str, config: str = "server:\n  index: {type: keyword}\n"):
        self.data_dir, self.config = data_dir, config

    def __enter__(self) -> str:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        config = os.path.join(self.data_dir, "hector.yaml")
        with open(config, "w") as f:
            f.write(self.config)
        self.log = open(os.path.join(self.data_dir, "serve.log"), "ab")
        self.proc = subprocess.Popen([BIN, "serve", "--config", config, "--address", f"127.0.0.1:{port}",
                                      "--data-dir", os.path.join(self.data_dir, "data")],
                                     stdout=self.log, stderr=self.log)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url + "/readyz") as r:
                    if r.status == 200:
                        return url
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"hector serve did not become ready; see {self.log.name}")
            time.sleep(0.05)

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.log.close()


def wait_for_vectors(url: str, api_key: str = "") -> None:
    """Waits until the index has embedded every event (the default embeds in
    the background, behind the words): GET /v1/index says vector_lag 0."""
    import json

    request = urllib.request.Request(url + "/v1/index", headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    deadline = time.monotonic() + 120
    while True:
        with urllib.request.urlopen(request) as r:
            if json.load(r).get("vector_lag", 0) == 0:
                return
        if time.monotonic() > deadline:
            raise RuntimeError("the index's vectors did not catch up in 2 minutes")
        time.sleep(0.05)
