"""doc/jupyterlab.png: the committed Continuous_Control.ipynb as a reader sees it in JupyterLab.

    python -m experiments.screenshot [--chromium /usr/bin/chromium] [--out doc/jupyterlab.png]

Serves a copy of the notebook with JupyterLab on 127.0.0.1 (no kernel is started: these are the
saved outputs), opens it in a headless Chromium driven by Playwright (the pip package, which
drives the given browser and downloads none), scrolls to the training cell and takes a screenshot.
`make screenshot` installs JupyterLab and Playwright first.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from continuous_control.results import ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"JupyterLab did not answer at {url} within {seconds:.0f} s")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium",
                        help="the browser's executable (a path)")
    parser.add_argument("--notebook", default=os.path.join(ROOT, "Continuous_Control.ipynb"))
    parser.add_argument("--out", default=os.path.join(ROOT, "doc", "jupyterlab.png"))
    parser.add_argument("--cell", default="history = train(", help="scroll to the code cell that shows this text")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright
    chromium = shutil.which(args.chromium) or args.chromium
    if not os.path.isfile(chromium):
        raise SystemExit(f"no browser at {args.chromium!r}: install Debian's chromium (apt-get install chromium) "
                         "or pass --chromium PATH")
    port, folder = free_port(), tempfile.mkdtemp(prefix="screenshot-")
    shutil.copy(args.notebook, os.path.join(folder, "Continuous_Control.ipynb"))
    server = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
                               "--ip=127.0.0.1", "--ServerApp.token=", "--ServerApp.password=",
                               "--ServerApp.disable_check_xsrf=True", f"--ServerApp.root_dir={folder}",
                               "--LabApp.news_url=", "--allow-root"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(f"{base}/api")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/lab/tree/Continuous_Control.ipynb?reset", wait_until="networkidle")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
            page.wait_for_timeout(2000)
            for button in ("No Kernel", "No"):       # the kernel dialog (saved outputs only), the news toast
                found = page.get_by_role("button", name=button, exact=True)
                if found.count():
                    found.first.click()
            for _ in range(5):                       # any other dialog (a kernel or build notice): dismissed
                if not page.locator(".jp-Dialog").count():
                    break
                page.keyboard.press("Escape")
                page.wait_for_timeout(500)
            cell = page.locator(".jp-CodeCell", has_text=args.cell).first
            cell.scroll_into_view_if_needed()
            cell.evaluate("element => element.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(3000)
            page.screenshot(path=args.out)
            browser.close()
        print(f"wrote {os.path.relpath(args.out, ROOT)}")
    finally:
        server.terminate()
        server.wait(timeout=20)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
