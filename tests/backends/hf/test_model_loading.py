"""``load_model`` refuses what is not a causal LM, and a hub id that cannot be had, before loading weights.

The non-causal models are real tiny ``transformers`` models saved with
``save_pretrained``; the unreachable hub is a closed port on 127.0.0.1.
"""

from __future__ import annotations

import re
import socket
import time

import pytest
from audit_support import output, run_audit, setup_audits, thresholds
from huggingface_hub import constants as hub_constants
from transformers import (
    BertConfig,
    BertForMaskedLM,
    BertForSequenceClassification,
    T5Config,
    T5ForConditionalGeneration,
)

from fairness_core.backends.hf.engine import ModelLoadError, check_causal_lm, load_model
from fairness_core.config.locations import HubUnavailableError, local_files_only
from fairness_core.errors import AuditUsageError

NEEDED = ("The audits need a causal language model: a decoder-only architecture such as GPT2LMHeadModel or "
          "*ForCausalLM (GPT-2, GPT-NeoX, Llama ...), or a decoder config with is_decoder=true.")
TINY_BERT = {"vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
             "intermediate_size": 32, "max_position_embeddings": 32}


def test_model_load_errors_are_usage_errors():
    assert issubclass(ModelLoadError, AuditUsageError) and issubclass(HubUnavailableError, AuditUsageError)


def test_a_bert_classifier_is_refused_before_its_weights_load(tmp_path):
    BertForSequenceClassification(BertConfig(**TINY_BERT, num_labels=3)).save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"not weights: the check must come first")
    with pytest.raises(ModelLoadError, match=re.escape(
            f"--model={tmp_path} is a model with a classification head (BertForSequenceClassification). {NEEDED}")):
        load_model(str(tmp_path), device="cpu")


def test_a_bert_classifier_ends_an_audit_run_with_one_usage_error(pytester, tmp_path):
    """Not 106 identical RuntimeErrors followed by "no audit violations": one usage error before generation."""
    folder = tmp_path / "bert-classifier"
    BertForSequenceClassification(BertConfig(**TINY_BERT, num_labels=2)).save_pretrained(folder)
    result = run_audit(setup_audits(pytester), folder, thresholds(lax=True))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    assert [line for line in result.errlines if line.startswith("ERROR:")] == [
        f"ERROR: --model={folder} is a model with a classification head (BertForSequenceClassification). {NEEDED}"]
    assert "Traceback" not in output(result) and "RuntimeError" not in output(result)


def test_an_encoder_only_model_is_refused(tmp_path):
    BertForMaskedLM(BertConfig(**TINY_BERT)).save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match=re.escape(
            f"--model={tmp_path} is an encoder-only model (BertForMaskedLM, is_decoder=false). {NEEDED}")):
        load_model(str(tmp_path), device="cpu")


def test_an_encoder_decoder_model_is_refused(tmp_path):
    config = T5Config(vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2)
    T5ForConditionalGeneration(config).save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match=re.escape(
            f"--model={tmp_path} is an encoder-decoder model (T5ForConditionalGeneration, is_encoder_decoder=true). "
            f"{NEEDED}")):
        load_model(str(tmp_path), device="cpu")


def test_decoders_pass_the_check(tiny_models):
    model, _ = tiny_models["bpe"]
    check_causal_lm(model.config, "gpt2")
    check_causal_lm(BertConfig(**TINY_BERT, is_decoder=True, architectures=["BertLMHeadModel"]), "bert-decoder")


# --- hub ids without a hub ---------------------------------------------------------------------------------

def test_an_uncached_hub_id_fails_at_once_with_hf_hub_offline():
    """conftest.py sets HF_HUB_OFFLINE for the whole suite."""
    start = time.monotonic()
    with pytest.raises(ModelLoadError, match=re.escape(
            f"--model=no-such-org/no-such-model is not in the local Hugging Face cache ({hub_constants.HF_HUB_CACHE}) "
            f"and HF_HUB_OFFLINE is set. Download it where the hub can be reached (hf download no-such-org/"
            f"no-such-model) and copy the cache, or pass the path of a local folder.")):
        load_model("no-such-org/no-such-model")
    assert time.monotonic() - start < 2


@pytest.fixture
def unreachable_hub(monkeypatch):
    """The hub is online as far as the settings go, but its endpoint is a closed port on this machine."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hub_constants, "ENDPOINT", endpoint)
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    return endpoint


def test_an_uncached_hub_id_fails_fast_when_the_hub_is_unreachable(unreachable_hub):
    start = time.monotonic()
    with pytest.raises(ModelLoadError, match=re.escape(
            f"--model=no-such-org/no-such-model at revision v2 is not in the local Hugging Face cache "
            f"({hub_constants.HF_HUB_CACHE}) and the Hugging Face hub at {unreachable_hub} cannot be reached (")
            + r".+\)\. Download it where the hub can be reached"):
        load_model("no-such-org/no-such-model", revision="v2")
    assert time.monotonic() - start < 5


def fake_hub_cache(root, repo_id: str):
    """The layout huggingface_hub leaves after a download: refs/main names a snapshot holding the files."""
    repo = root / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40, encoding="utf-8")
    (repo / "snapshots" / ("0" * 40)).mkdir(parents=True)
    (repo / "snapshots" / ("0" * 40) / "config.json").write_text("{}", encoding="utf-8")


def test_a_cached_hub_id_is_read_from_the_cache_when_the_hub_is_unreachable(unreachable_hub, tmp_path, monkeypatch):
    fake_hub_cache(tmp_path, "some-org/cached-model")
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path))
    assert local_files_only("some-org/cached-model") is True
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    assert local_files_only("some-org/cached-model") is True
    with pytest.raises(HubUnavailableError, match="^some-org/other-model is not in the local Hugging Face cache"):
        local_files_only("some-org/other-model")


def test_a_local_folder_never_asks_the_hub(tiny_model_dirs, unreachable_hub):
    assert local_files_only(str(tiny_model_dirs["bpe"])) is False


def test_an_uncached_hub_id_ends_an_audit_run_at_once_when_the_hub_is_unreachable(pytester, unreachable_hub):
    start = time.monotonic()
    result = run_audit(setup_audits(pytester), "no-such-org/no-such-model", thresholds(lax=True))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    [error] = [line for line in result.errlines if line.startswith("ERROR:")]
    assert error.startswith("ERROR: --model=no-such-org/no-such-model is not in the local Hugging Face cache "), error
    assert f"the Hugging Face hub at {unreachable_hub} cannot be reached" in error
    assert "Traceback" not in output(result)
    assert time.monotonic() - start < 10
