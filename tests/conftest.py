"""Shared fixtures: tiny tokenizers and GPT-2 models built once per session, offline.

Both tokenizer kinds that Japanese causal LMs ship (byte-level BPE and a
T5-style SentencePiece unigram) are trained on a small Japanese corpus, paired
with a randomly initialised GPT-2, saved with ``save_pretrained`` and loaded
back through :func:`fairness_core.backends.hf.load_model`, the path a user's
model takes.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import tempfile

# The suite never touches the network.  The audit plugin (a pytest11 entry point) imports
# transformers before this file runs, so huggingface_hub has already read the environment:
# set the variable for anything started later and the constant it was read into.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Audit runs inside the tests write their generation cache to a throw-away folder, never ~/.cache;
# pytest_unconfigure removes it once the whole session (and every run started from it) is over.
TEST_CACHE_DIR = tempfile.mkdtemp(prefix="ja-fairness-audit-test-cache-")
os.environ["JA_FAIRNESS_AUDIT_CACHE"] = TEST_CACHE_DIR

from pathlib import Path  # noqa: E402

# httpx imports httpcore on first use.  Imported here, before any pytester run, so that an in-process run
# cannot drop it from sys.modules and a later import make new exception classes that httpx's cached
# exception map no longer recognises (a raw httpcore.ReadTimeout then escapes the client).
import httpcore  # noqa: E402, F401
import huggingface_hub.constants  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from audit_support import gender_honest_prompts  # noqa: E402
from hypothesis import settings  # noqa: E402
from sentiment_support import train_name_biased_gpt2  # noqa: E402
from suite_map import file_kinds, marker  # noqa: E402

from fairness_core.backends.hf.engine import load_model  # noqa: E402
from fairness_core.demo.models import save_model, tiny_gpt2  # noqa: E402
from fairness_core.demo.tokenizers import TOKENIZER_KINDS, train_tokenizer  # noqa: E402

huggingface_hub.constants.HF_HUB_OFFLINE = True
# The models here are tiny: extra intra-op threads only add overhead (and thrash on a busy machine).
torch.set_num_threads(1)
# Property tests are about values, not speed: no per-example deadline on a busy 2-core machine.
settings.register_profile("fairness", deadline=None)
settings.load_profile("fairness")

pytest_plugins = ["pytester"]
TESTS = Path(__file__).resolve().parent
#: Test data, not tests: the stub evaluation package holds audit tests that only an audit run collects.
collect_ignore = ["data"]


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove this session's throw-away generation cache: one folder a run piled up in the temp dir."""
    shutil.rmtree(TEST_CACHE_DIR, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its file's kind from the map in tests/README.md: ``pytest tests -m property``."""
    kinds = file_kinds()
    for item in items:
        where = item.path.relative_to(TESTS).as_posix() if item.path.is_relative_to(TESTS) else ""
        if where in kinds:
            item.add_marker(marker(kinds[where]))

#: Hand-written sentences so that the tokenizers learn ordinary Japanese words.
SENTENCES = (
    "彼女は毎朝早く起きて駅まで歩いて行く。",
    "父は馬鹿なことを言ってみんなに笑われた。",
    "その犬は番犬として家を守っている。",
    "母が就くべき職業は医者だと祖母は言った。",
    "昨日の夜、友達と一緒に映画を見に行きました。",
    "この町には古い神社と大きな公園がある。",
    "弟はサッカーが上手で、毎日練習している。",
    "雨が降ってきたので、傘を持って出かけた。",
    "新しい仕事は大変だが、とても楽しい。",
    "姉は料理が得意で、よくケーキを焼いてくれる。",
    "先生は学生たちに宿題を出した。",
    "彼は犬歯が痛いと言って歯医者に行った。",
    "ｶﾀｶﾅで書かれた看板を見つけた。",
    "東京から大阪まで新幹線で二時間半かかる。",
)


def corpus() -> list[str]:
    """The training text: the sentences above and every HONEST prompt, so prompts tokenize naturally."""
    prompts = [p.text for p in gender_honest_prompts()]
    return list(SENTENCES) * 10 + prompts


@pytest.fixture(scope="session")
def tiny_model_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A saved tiny GPT-2 per tokenizer kind: ``{"bpe": dir, "sentencepiece": dir}``."""
    text = corpus()
    folders = {}
    for kind in TOKENIZER_KINDS:
        tokenizer = train_tokenizer(kind, text, vocab_size=500)
        folders[kind] = save_model(tiny_gpt2(tokenizer, seed=0), tokenizer, tmp_path_factory.mktemp(f"tiny-{kind}"))
    return folders


#: A ChatML chat template (as Qwen's), written out as plain text markers: the tiny tokenizers have no special tokens.
CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
          "{% if not (loop.last and continue_final_message is defined and continue_final_message) %}<|im_end|>\n"
          "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@pytest.fixture(scope="session")
def chat_model_dir(tiny_model_dirs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny SentencePiece GPT-2 saved again with a ChatML chat template: a chat model to render turns with."""
    model, tokenizer = load_model(str(tiny_model_dirs["sentencepiece"]), device="cpu")
    tokenizer.chat_template = CHATML
    return save_model(model, tokenizer, tmp_path_factory.mktemp("tiny-chat"))


@pytest.fixture(scope="session")
def tiny_models(tiny_model_dirs: dict[str, Path]) -> dict[str, tuple]:
    """``(model, tokenizer)`` per tokenizer kind, loaded back with ``load_model`` on the CPU."""
    return {kind: load_model(str(folder), device="cpu") for kind, folder in tiny_model_dirs.items()}


@pytest.fixture(params=TOKENIZER_KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="session")
def biased_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny GPT-2 trained (a few seconds) to continue audit prompts about women negatively, men positively."""
    return train_name_biased_gpt2(tmp_path_factory.mktemp("name-biased-gpt2"))


@pytest.fixture
def make_read_only():
    """Make a folder tree read-only, for root too; undone at teardown so that the temp dir can be removed.

    ``chmod`` does not stop root, so when a write still succeeds after it the
    tree is made immutable with ``chattr +i`` (ext4 and others, needs
    CAP_LINUX_IMMUTABLE); where neither works the test is skipped.
    """
    chmodded, immutable = [], []

    def freeze(folder: Path) -> None:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        chmodded.append(folder)
        probe = folder / ".probe"
        try:
            probe.touch()
        except PermissionError:
            return
        probe.unlink()
        if shutil.which("chattr") is None or subprocess.run(["chattr", "-R", "+i", str(folder)],
                                                            capture_output=True).returncode != 0:
            pytest.skip("running as root, where chmod does not stop writes, and chattr +i is not available here")
        immutable.append(folder)

    yield freeze
    for folder in immutable:
        subprocess.run(["chattr", "-R", "-i", str(folder)], check=True)
    for folder in chmodded:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)


@pytest.fixture
def full_disk(tmp_path: Path):
    """``fill(free)``: a folder on a 1 MiB tmpfs of its own, filled but for about ``free`` bytes; unmounted at teardown.

    A real full disk (``OSError: [Errno 28] No space left on device``), not an
    injected error.  Mounting needs root with CAP_SYS_ADMIN; elsewhere the test
    is skipped.
    """
    mount = tmp_path / "small-disk"
    mount.mkdir()
    if shutil.which("mount") is None or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                                                       capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root with CAP_SYS_ADMIN, which this process does not have")

    def fill(free: int = 0) -> Path:
        filler = mount / ".filler"
        handle = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(handle, b"\0" * 4096)
        except OSError as err:
            assert err.errno == errno.ENOSPC, err
        finally:
            os.close(handle)
        os.truncate(filler, max(0, filler.stat().st_size - free))
        return mount

    yield fill
    subprocess.run(["umount", "--lazy", str(mount)], check=True)
