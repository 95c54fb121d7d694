"""Starts llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`, same
arguments) with llama.cpp's extra buffer types off: no weight repacking into AMX or other
CPU-specific layouts. A build of llama.cpp for the machine it was compiled on uses AMX tiles
when the CPU lists them, and under some hypervisors those instructions still fault (SIGILL on
the first completion); the plain layout runs the same model everywhere."""

import runpy
import sys

import llama_cpp.llama_cpp as native

_default_params = native.llama_model_default_params


def _params_without_extra_buffers():
    params = _default_params()
    params.use_extra_bufts = False
    return params


native.llama_model_default_params = _params_without_extra_buffers
sys.argv[0] = "llama_cpp.server"
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
