"""API grading throughput against a local OpenAI-compatible server with a fixed latency per call.

    python benchmarks/api_throughput.py [--prompts 400] [--latency 0.05] [--concurrency 4 16 64]

(a) the reference implementation's pattern: one request, awaited, then the next;
(b) examflow's `openai` back end with `concurrency` requests in flight (and its retries, cache off:
    every prompt is new). Prints pairs/s for each, the ratio (b)/(a), and the client's CPU time per
    request (the server runs in a process of its own): with a fast server, the client's CPU is the limit.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]
from llm_server import LLMServer, Slow  # noqa: E402

from examflow.grading.backends import OpenAIBackend, Request  # noqa: E402


def requests(n: int, tag: str) -> list[Request]:
    return [
        Request("grade-self-rating", {"question": f"Question {tag} {i}?", "context": f"Passage {i}."}) for i in range(n)
    ]


def serve(latency: float, address) -> None:
    """The local server, in a process of its own: its CPU time is not the client's."""
    with LLMServer(default=lambda prompt: Slow(latency, "3")) as server:
        address.send(server.base_url)
        address.recv()  # until the benchmark is done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=400)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the server takes per call")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[4, 16, 64])
    args = parser.parse_args()
    here, there = multiprocessing.Pipe()
    server = multiprocessing.get_context("fork").Process(target=serve, args=(args.latency, there), daemon=True)
    server.start()
    base_url = here.recv()
    with tempfile.TemporaryDirectory() as cache:
        sequential = OpenAIBackend(cache, model="m", base_url=base_url, concurrency=1)
        start = time.perf_counter()
        for request in requests(args.prompts, "a"):  # one awaited at a time
            sequential.answer([request])
        reference = args.prompts / (time.perf_counter() - start)
        print(f"{args.prompts} prompts, {args.latency * 1000:.0f} ms a call")
        print(f"(a) one request at a time: {reference:.1f} pairs/s")
        for concurrency in args.concurrency:
            backend = OpenAIBackend(cache, model="m", base_url=base_url, concurrency=concurrency)
            start, cpu = time.perf_counter(), time.process_time()
            answers = backend.answer(requests(args.prompts, f"b{concurrency}"))
            rate, cpu = args.prompts / (time.perf_counter() - start), time.process_time() - cpu
            assert all(a.text == "3" for a in answers)
            print(f"(b) examflow, concurrency {concurrency}: {rate:.1f} pairs/s, (b)/(a) = {rate / reference:.1f}, "
                  f"client CPU {cpu / args.prompts * 1000:.2f} ms a request")  # fmt: skip
    here.send("done")
    server.join()


if __name__ == "__main__":
    main()
