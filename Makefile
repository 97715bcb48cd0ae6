# One-command setup and entry points. Every target creates (or reuses) the
# project-local virtual environment in .venv first; re-running is a no-op once
# it is installed (the stamp file tracks requirements.txt and setup.py).
# The interpreter .venv is built with: $(PYTHON) if given, else python3.11 or
# python3, whichever first is a Python the pinned packages support (3.11; see
# tools/find_python.sh). With none, make stops before creating anything, with
# one line saying what to install, and exit status 2.
PYTHON ?=
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# TFF 0.87.0 pins jax/jaxlib==0.4.14, which PyPI no longer serves: install it
# without dependency resolution; requirements.txt pins its real needs. TFF
# imports google-vizier's pure-Python `pyvizier` only, so vizier also comes
# without its (server-side, sqlalchemy) dependencies.
TFF := tensorflow-federated==0.87.0 google-vizier==0.1.11

.PHONY: install demo test clean-venv

install: $(STAMP)

$(STAMP): requirements.txt constraints.txt setup.py
	$(eval VENV_PYTHON := $(shell sh tools/find_python.sh $(PYTHON)))
	$(if $(filter /%,$(VENV_PYTHON)),,$(error $(VENV_PYTHON)))
	@# A .venv without the stamp is left from an install that stopped (or from
	@# another interpreter): rebuild it rather than build on it.
	@if [ -d $(VENV) ] && { [ ! -f $(STAMP) ] || ! $(PY) -c '' 2>/dev/null; }; then \
	  echo "$(VENV) is incomplete (an earlier install did not finish): rebuilding it"; \
	  rm -rf $(VENV); fi
	[ -x $(PY) ] || $(VENV_PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -c constraints.txt
	$(PY) -m pip install --quiet --no-deps $(TFF)
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	$(PY) -c "import tensorflow_federated as tff, tensorflow_privacy, dp_accounting; print('tff', tff.__version__, 'installed')"
	touch $(STAMP)

# The main job: the four algorithms (with Ditto) on scikit-learn's bundled
# digits, split non-IID across clients; no download needed. Then Robust-HDP's
# comparison, whose RPCA uses the inexact ALM: it solves the same problem as
# the default (the authors' ADMM) in about a tenth of the iterations and
# prints the same table here, which keeps the whole demo under 3 minutes.
# Then UDP-Alg's.
demo: install
	$(PY) run_scripts/run_experiment.py --preset=digits --algorithm=all --r=0.1 \
	    --lambda_p=0.05 --lambda_np=0.05 --backend=vectorized --output_dir=results/digits
	$(PY) run_scripts/run_robust_hdp.py --dataset=digits --algorithm=all \
	    --privacy_distribution=dist1 --model=fc --rounds=30 --backend=direct \
	    --rpca_method=ialm --noprogress --output_dir=results/robust_hdp_digits
	$(PY) run_scripts/run_udp.py --algorithm=all --rounds=40 --noprogress \
	    --output_dir=results/udp_digits

test: install
	$(PY) -m pytest tests

clean-venv:
	rm -rf $(VENV)
