"""One engine call per item: resume, budget, data -> sandbox -> environment -> agent -> trace ->
grade -> result.

Whatever happens to the agent (crash, time-out, Ctrl-C), the trace is closed with how the run
ended and the final workspace is snapshotted and graded (after Ctrl-C, within a bound). Nothing
here knows pytest: the plugin calls :func:`run_item` and reports what it returns.
"""

from __future__ import annotations

import tempfile
import time
import traceback
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Iterator

from pytest_mlab.actions.registry import implementations
from pytest_mlab.agents import load_agent
from pytest_mlab.data import prepare_data
from pytest_mlab.data.cache import DATA_DIGESTS
from pytest_mlab.env import Environment, ReadOnlyRules
from pytest_mlab.env.ctrl_c import INTERRUPTED_GRADING_S, one_ctrl_c
from pytest_mlab.env.deadline import RunTimedOut, deadline
from pytest_mlab.errors import HostLost, MlabError
from pytest_mlab.grading.claims import unmeasured_claims
from pytest_mlab.grading.grader import Grade, grade_snapshot, keep_timing
from pytest_mlab.grading.starter_run import starter_run
from pytest_mlab.grading.verdict import judge
from pytest_mlab.llm import BudgetExhausted, LLMError, ProviderError, TimeLimitReached, TokenLimitExceeded
from pytest_mlab.llm.session import human_helper, open_session
from pytest_mlab.outcomes import EndReason
from pytest_mlab.results.budget import Budget, Ledger, over_budget
from pytest_mlab.results.record import JudgedBy, RunIdentity, RunResult
from pytest_mlab.results.resume import finished_result
from pytest_mlab.results.signing import results_key, signed
from pytest_mlab.sandbox import SandboxOptions, open_sandbox
from pytest_mlab.sandbox.docker.hosts import DockerHost, forget_host
from pytest_mlab.sandbox.gpus import GpuClaim, GpuPool
from pytest_mlab.sandbox.owner import owned_prefix
from pytest_mlab.sandbox.registry import resolve_kind
from pytest_mlab.sandbox.workspace import remove_tree
from pytest_mlab.spec.plan import RunPlan, Settings
from pytest_mlab.trace import SnapshotStore, TraceWriter, read_trace
from pytest_mlab.trace.snapshots.data_digests import vouch
from pytest_mlab.trace.progress import GRADING, INTERRUPTED, QUIET, SCORING_STEPS, SETTING_UP, RunStatus
from pytest_mlab.trace.step_scores import saved_step_scores


class BudgetSpent(MlabError):
    """The session's LLM budget is spent: the item is not started (the plugin skips it)."""


def run_item(plan: RunPlan, nodeid: str, settings: Settings, *, session: str | None = None,
             console: Any = None, gpu_pool: GpuPool | None = None) -> RunResult:
    """The result of one item: a finished run of an earlier session (--mlab-resume), else a new run.
    ``gpu_pool``: the session's GPUs (--mlab-gpus); the run holds its own until it is graded
    (None: no assignment, see ``SandboxOptions.gpus``).

    Raises :class:`BudgetSpent` when --mlab-max-cost is reached before the run starts (a run that
    reaches it later ends as ``budget spent``), and
    ``KeyboardInterrupt`` after a run cut short by Ctrl-C was graded and its result written, or its
    grading ran past :data:`INTERRUPTED_GRADING_S`."""
    if settings.resume:
        resumed = _resumed(plan, nodeid)
        if resumed is not None:
            return resumed
    budget = None
    if settings.max_cost is not None:  # each paid LLM call is charged as it is made (see results/budget.py)
        ledger = Ledger(settings.out_dir)
        stop = over_budget(ledger, settings.max_cost)
        if stop:
            raise BudgetSpent(stop)
        budget = Budget(ledger, settings.max_cost, plan.run_id)
    # the live status the controller shows (see trace/progress.py); gone when the run is over
    with RunStatus.start(settings.out_dir, plan.run_dir.name, nodeid=nodeid, run_id=plan.run_id, session=session,
                         max_steps=plan.limits.max_steps) as status, ExitStack() as holding:
        claim = None  # --mlab-gpus: the GPUs this run holds, grading included
        try:
            if settings.ray:  # Ray places the run and gives it its GPUs: no lease here
                return _on_ray(plan, nodeid, settings, session)
            claim = holding.enter_context(_claim_gpus(plan, gpu_pool, status))
            result = execute(plan, nodeid, console=console, session=session, budget=budget, status=status,
                             gpus=_held(claim), gpu_claim=claim)
        except MlabError as exc:  # data preparation or the sandbox failed: the harness, not the agent
            result = _harness_failed(plan, nodeid, str(exc), _held(claim))
        if settings.score_steps and result.trace:
            status.phase(SCORING_STEPS)
            result = _with_step_scores(plan, result, _held(claim), claim)
    return result


def _harness_failed(plan: RunPlan, nodeid: str, detail: str, gpus: tuple[str, ...] | None,
                    end_reason: EndReason = EndReason.CRASHED) -> RunResult:
    """A run the harness could not carry out: data, the sandbox, or (HOST_LOST) the node it ran on."""
    return RunResult.crashed(RunIdentity.of_plan(plan, nodeid, resolve_kind(plan.sandbox), gpus), detail,
                             judged=JudgedBy.of_plan(plan), end_reason=end_reason)


def _on_ray(plan: RunPlan, nodeid: str, settings: Settings, session: str | None) -> RunResult:
    """--mlab-ray: the run on the node Ray places it on (cluster/ray_runs.py), its folder brought
    back to this results folder and its result records signed with this folder's key."""
    from pytest_mlab.cluster.ray_runs import Resources, run_on_ray
    from pytest_mlab.cluster.run_folder import resign, unpack

    remove_tree(plan.run_dir)  # a lost node leaves nothing here that --mlab-resume would take for this run
    try:
        sent = run_on_ray(settings.ray, _run_on_node, (plan, nodeid, session, settings.score_steps),
                          Resources(gpus=plan.gpus, memory=plan.limits.memory))
    except HostLost as exc:
        return _harness_failed(plan, nodeid, f"HostLost: {exc}", None, end_reason=EndReason.HOST_LOST)
    trace = plan.run_dir / "trace.jsonl"
    moved = {"run_dir": str(plan.run_dir), "trace": str(trace)}
    if sent.archive is not None:
        unpack(sent.archive, plan.run_dir)
        if trace.is_file():
            resign(trace, sent.key, results_key(plan.out_dir), moved)
    return RunResult.from_dict({**sent.result, **(moved if sent.result.get("trace") else {})})


def _run_on_node(plan: RunPlan, nodeid: str, session: str | None, score_steps: bool, *, gpus: tuple[str, ...],
                 node: str) -> Any:
    """--mlab-ray, on the node: the run in a scratch results folder of the node's own (removed
    after), with the GPUs Ray gave it; returns a :class:`~pytest_mlab.cluster.ray_runs.NodeRun`.
    API keys are the node's own, from its environment: the controller never sends any."""
    from pytest_mlab.cluster.ray_runs import NodeRun
    from pytest_mlab.cluster.run_folder import pack
    from pytest_mlab.llm import secrets

    secrets.take_from_environment()  # out of the reach of the commands that the run starts
    scratch = Path(tempfile.mkdtemp(prefix=owned_prefix("ray")))  # named for its owner: swept if the node's worker dies
    here = replace(plan, out_dir=scratch)
    try:
        try:
            result = execute(here, nodeid, session=session, gpus=gpus, node=f"ray:{node[:12]}")
        except MlabError as exc:
            result = _harness_failed(here, nodeid, str(exc), gpus)
        if score_steps and result.trace:
            result = _with_step_scores(here, result, gpus)
        archive = pack(here.run_dir) if here.run_dir.is_dir() else None
        return NodeRun(result.to_dict(), archive, results_key(scratch), node)
    finally:
        remove_tree(scratch)


@contextmanager
def _claim_gpus(plan: RunPlan, pool: GpuPool | None, status: RunStatus) -> Iterator[GpuClaim | None]:
    """The GPUs of the item while it runs: a task that needs one waits for a free one (its status
    says so), any other takes a free one or runs on the CPU at once. On a remote docker host the
    GPUs are that host's own, listed there and shared out among the items on it; leased on the host
    the run starts on, and leased again on another if a sandbox of the run opens there."""
    if pool is None:
        yield None
        return
    required = plan.needs_gpu
    pool_of = partial(_gpu_pool_of, pool, plan.limits.max_time)
    with GpuClaim(pool_of, plan.run_id, required=required, on_wait=status.phase) as claim:
        claim.ids_on(_gpu_machine_of(plan))
        if required:  # it may have waited
            status.phase(SETTING_UP)
        yield claim


def _gpu_pool_of(pool: GpuPool, max_time: float, host: DockerHost | None) -> GpuPool:
    """The pool a run's GPUs come from on ``host`` (see docker/gpus.py, ``gpu_machine``): a remote
    docker host's own (held on the host too, for as long as a run of ``max_time`` may last), else
    (None) this machine's."""
    if host is None:
        return pool
    from pytest_mlab.sandbox.docker.gpu_leases import host_gpu_guard
    from pytest_mlab.sandbox.docker.gpus import host_gpus

    return pool.on_docker_host(host.name, lambda: host_gpus(host),
                               guard=host_gpu_guard(host, max_time))


def _held(claim: GpuClaim | None) -> tuple[str, ...] | None:
    """The GPU ids a run holds now (None: no assignment was made)."""
    return None if claim is None else claim.ids


def _gpu_machine_of(plan: RunPlan) -> DockerHost | None:
    """Whose GPUs the run's first sandbox will get: the remote docker host it will use, else
    (None) this machine's."""
    if plan.sandbox != "docker":
        return None
    from pytest_mlab.sandbox.docker.gpus import gpu_machine
    from pytest_mlab.sandbox.docker.hosts import current_host

    try:
        return gpu_machine(current_host())
    except MlabError:  # no host answers: opening the sandbox will say so
        return None


def _resumed(plan: RunPlan, nodeid: str) -> RunResult | None:
    result = finished_result(plan.run_dir, plan.run_id, nodeid, results_key(plan.out_dir))
    if result is not None and result.best_improvement is None:
        scores = saved_step_scores(plan.run_dir)
        if scores:
            result = replace(result, best_improvement=scores.get("best_improvement"))
    return result


def _with_step_scores(plan: RunPlan, result: RunResult, gpus: tuple[str, ...] | None,
                      gpu_claim: GpuClaim | None = None) -> RunResult:
    """--mlab-score-steps: the best step's improvement; the run stands as graded if that fails."""
    from pytest_mlab.grading.rescore import score_steps

    try:
        data = prepare_data(plan.task, plan.variant, plan.cache_dir)
        scores = score_steps(plan.task, plan.run_dir, data, plan.baseline, sandbox=plan.sandbox,
                             options=sandbox_options(plan, gpus, gpu_claim))
    except MlabError:
        return result  # only the curve is missing
    return replace(result, best_improvement=scores["best_improvement"])


def execute(plan: RunPlan, nodeid: str, *, console: Any = None, session: str | None = None,
            budget: Budget | None = None, status: RunStatus = QUIET, gpus: tuple[str, ...] | None = None,
            gpu_claim: GpuClaim | None = None, node: str | None = None) -> RunResult:
    """``console``: the terminal for the ``human`` LLM and Request Help (None: sys.stdin/stdout).
    ``session``: the pytest session's id, written in the trace so that its controller finds this
    run's result on disk even when the report carrying it is lost (Ctrl-C, a dead worker).
    ``budget``: the session's --mlab-max-cost, charged by each paid LLM call of the run.
    ``status``: the run's live status, kept current through data preparation, steps and grading.
    ``gpus``: the GPU ids the run holds (--mlab-gpus, or Ray's), for its sandboxes and its trace;
    ``gpu_claim``: on a remote docker host, the claim that leases them on the host a sandbox opens on.
    ``node``: the cluster node running it (--mlab-ray), recorded as its host."""
    started = time.monotonic()
    data = prepare_data(plan.task, plan.variant, plan.cache_dir, notify=status.phase)
    plan = replace(plan, task=plan.task.with_prepared(data.hidden))
    run_dir = plan.run_dir
    data_files = data.public_files()
    digests = data.public.parent / DATA_DIGESTS
    # before anything unlinks the data (an earlier run's store here links it) or links it again
    vouch([data.public / name for name in data_files], digests)
    remove_tree(run_dir)
    run_dir.mkdir(parents=True)
    trace_path = run_dir / "trace.jsonl"
    read_only = ReadOnlyRules(frozenset(data_files), plan.task.read_only)
    bound = implementations(plan.actions)
    options = sandbox_options(plan, gpus, gpu_claim)
    # the store settles last, once the workspace and grading folders (links to the data) are gone
    with SnapshotStore(run_dir / "snapshots", data_digests=digests) as snapshots, \
            TraceWriter(trace_path, observer=status.observe) as trace, \
            open_sandbox(plan.sandbox, options=options) as sandbox, ExitStack() as after_ctrl_c:
        # the Ray node that runs it (its docker, if any, is the node's own), else docker's daemon
        host = node or getattr(getattr(sandbox, "host", None), "name", None)
        held = sandbox.options.gpus if gpu_claim is not None else gpus  # the ids leased on the sandbox's host
        identity, judged = RunIdentity.of_plan(plan, nodeid, sandbox.name, held, host), JudgedBy.of_plan(plan)
        trace.write({"type": "run", "session": session, **identity.to_record(), **judged.to_record(),
                     "limits": vars(plan.limits),
                     "actions": [a.name for a in plan.actions], "data_files": data_files})
        _populate(sandbox, plan, data.public, data_files)
        llm = open_session(plan, trace, console=console, budget=budget) if plan.llms else None
        env = Environment(sandbox=sandbox, actions=plan.actions, implementations=bound, limits=plan.limits,
                          read_only=read_only, trace=trace, snapshots=snapshots,
                          research_problem=plan.task.description, llm=llm, human=human_helper(llm))
        if llm is not None:  # no LLM attempt waits past the run's max_time, as the Environment counts it
            llm.deadline = env.started + plan.limits.max_time
        interrupted, infrastructure, detail = False, False, None
        try:
            with deadline(plan.limits.max_time):
                load_agent(plan, llm).run(env)
            if not env.done:
                env.end(EndReason.NO_FINAL_ANSWER)
        except RunTimedOut as exc:
            env.end(EndReason.TIME_LIMIT, str(exc))
        except TimeLimitReached as exc:  # an LLM call met the run's max_time: out of time, not the provider's failure
            env.end(EndReason.TIME_LIMIT, f"TimeLimitReached: {exc}")
        except TokenLimitExceeded as exc:
            env.end(EndReason.TOKEN_LIMIT, str(exc))
        except (ProviderError, BudgetExhausted) as exc:  # the harness's side gave out, not the agent
            infrastructure, detail = True, f"{type(exc).__name__}: {exc}"
            env.end(EndReason.PROVIDER_ERROR if isinstance(exc, ProviderError) else EndReason.BUDGET_SPENT, detail)
        except LLMError as exc:  # the LLM set-up failed (key, model, script): a crash, explained without a traceback
            infrastructure, detail = True, f"LLMError: {exc}"
            env.end(EndReason.CRASHED, detail)
        except KeyboardInterrupt:
            interrupted = True
            after_ctrl_c.enter_context(one_ctrl_c())  # first: the same Ctrl-C may come again at once
            status.phase(INTERRUPTED)  # an xdist controller passes Ctrl-C on to no run in this phase
            env.end(EndReason.INTERRUPTED, "Ctrl-C")
        except HostLost as exc:  # the machine under the sandbox went away: the harness's failure
            infrastructure, detail = True, f"HostLost: {exc}"
            env.end(EndReason.HOST_LOST, detail)
            forget_host()  # this worker's next runs (and this one's grading) go to a host that answers
        except Exception as exc:  # an agent bug must still leave a graded, readable run
            detail = "".join(traceback.format_exception(exc))[-4000:]
            env.end(EndReason.CRASHED, detail)
        final = env.final_snapshot()
        if not interrupted:
            status.phase(GRADING)
        if final is None:  # the workspace went beyond its limits: the agent's failure, nothing to grade
            grade, detail = Grade(None, env.over_limits), env.over_limits
        else:
            try:
                with deadline(INTERRUPTED_GRADING_S) if interrupted else nullcontext():
                    # checked again: under the local backend the agent could have rewritten the answers (cache.py);
                    # an interrupted run keeps its phase (plugin/interrupts.py)
                    data = prepare_data(plan.task, plan.variant, plan.cache_dir,
                                        notify=None if interrupted else status.phase)
                    grade = grade_snapshot(plan.task, snapshots, final, data, sandbox=sandbox.name, options=options)
            except RunTimedOut:  # only after Ctrl-C: the row says it was not graded (results/recover.py)
                trace.write({"type": "grading stopped", "session": session,
                             "detail": f"grading after Ctrl-C did not finish within {INTERRUPTED_GRADING_S:.0f}s"})
                raise KeyboardInterrupt from None
        keep_timing(grade, run_dir)
        records = read_trace(trace_path)
        claims = unmeasured_claims(records)
        verdict = judge(plan.task, plan.baseline, grade, env.end_reason, plan.agent.expect, detail, claims,
                        variant=plan.variant, starter=starter_run(records, plan.task.starter))
        result = RunResult.of_run(
            identity, judged, passed=verdict.passed, score=grade.score, improvement=verdict.improvement,
            success=verdict.success, valid=grade.valid, invalid_reason=grade.invalid_reason,
            end_reason=env.end_reason, failure=verdict.failure, message=verdict.message, steps=env.steps,
            wall_time=round(time.monotonic() - started, 3), run_dir=str(run_dir), trace=str(trace_path),
            tokens=llm.total_tokens if llm else 0, cost=llm.total_cost if llm else 0.0, unmeasured_claims=claims,
            infrastructure=infrastructure)
        snapshots.wait_durable()  # a result record names only a snapshot on disk (store.py)
        trace.write(signed({"type": "result", "session": session, "snapshot": final, **result.to_dict()},
                           results_key(plan.out_dir)))
    if interrupted:
        raise KeyboardInterrupt
    return result


def sandbox_options(plan: RunPlan, gpus: tuple[str, ...] | None = None,
                    gpu_claim: GpuClaim | None = None) -> SandboxOptions:
    """The task's limits and run-time requirements, and the run's GPUs, as the sandbox backends take them."""
    return replace(SandboxOptions.for_task(plan.task, plan.limits, plan.run_id), gpus=gpus, gpu_claim=gpu_claim)


def _populate(sandbox, plan: RunPlan, public: Path, data_files: list[str]) -> None:
    """Starter files are copied (the agent edits them); data files are linked (read-only, maybe large)."""
    for path, relative in plan.task.env_files():
        sandbox.copy_in(path, relative)
    for relative in data_files:
        sandbox.copy_in(public / relative, relative, link=True)
