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
    """`hector serve` on a data directory, keyword index, no auth, on a free
    loopback port, until the with block ends."""

    @staticmethod
    def available() -> bool:
        return bool(BIN)

    def __init__(self, data_dir: str):
        self.data_dir = data_dir

    def __enter__(self) -> str:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        config = os.path.join(self.data_dir, "hector.yaml")
        with open(config, "w") as f:
            f.write("server:\n  index: {type: keyword}\n")
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
