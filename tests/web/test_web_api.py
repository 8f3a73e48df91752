"""The web app's JSON API (colony_web/app.py): games, moves, agents, records, analysis, bad input.

Runs the Starlette app in-process (its worker processes are real), with tiny games.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the web extra (starlette, uvicorn) is not installed")
from starlette.testclient import TestClient

import colony_env as ce
from colony_training.eval.records import GameRecord, write_records
from colony_web import cli
from colony_web.app import MAX_JSON_BYTES, RECORD_FILE, WebConfig, create_app
from colony_web.views import legal_view

CHECKPOINT = Path(__file__).resolve().parents[2] / "checkpoints" / "colony_ppo.pt"
THINK_LIMIT = 300.0  # generous: a fresh worker may compile the search kernels first


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("web_out")


@pytest.fixture(scope="module")
def client(out_dir):
    app = create_app(WebConfig(out_dir=out_dir, workers=2, think_limit=THINK_LIMIT, checkpoints=[CHECKPOINT]))
    with TestClient(app) as c:
        yield c


def new_game(client, **body) -> dict:
    r = client.post("/api/games", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def error_of(r, status: int) -> str:
    assert r.status_code == status, r.text
    message = r.json()["error"]
    assert "\n" not in message and "Traceback" not in message
    return message


def first_legal(view: dict) -> int:
    src = next(iter(view["legal"]["sources"].values()))
    return next(iter(src.values()))["actions"][0]["action"]


# --- games --------------------------------------------------------------------------
def test_new_game_lists_exactly_the_engines_legal_actions(client):
    g = new_game(client, red="human", blue="random", seed=5)
    state = ce.new_game(5)
    assert g["state"] == state.to_dict() and g["moves"] == [] and not g["over"]
    listed = sorted(a["action"] for ts in g["legal"]["sources"].values() for t in ts.values() for a in t["actions"])
    assert listed == [int(a) for a in ce.legal_actions(state)]
    kinds = {t["kind"] for ts in g["legal"]["sources"].values() for t in ts.values()}
    assert kinds == {"normal"}  # R3.5: connections start locked, so every first move is a normal move


def test_moves_by_id_and_notation_then_agent_reply(client):
    g = new_game(client, red="human", blue="random", seed=7)
    a = first_legal(g)
    r = client.post(f"/api/games/{g['id']}/move", json={"action": a})
    assert r.status_code == 200, r.text
    v = r.json()
    assert v["actions"] == [a] and v["state"]["to_move"] == "blue" and v["legal"] is None
    assert error_of(client.post(f"/api/games/{g['id']}/move", json={"action": a}), 409).startswith("blue is played by random")
    v = client.post(f"/api/games/{g['id']}/step").json()
    assert len(v["actions"]) == 2 and v["movers"] == ["red", "blue"] and v["legal"] is not None
    state = ce.GameState.from_dict(v["state"])
    move = ce.action_to_str(int(ce.legal_actions(state)[0]), state)
    v = client.post(f"/api/games/{g['id']}/move", json={"move": move}).json()
    assert v["moves"][-1] == move and v["last"]["notation"] == move


def test_a_game_from_a_set_up_position(client):
    from helpers import pos

    state = pos(
        """
        . . . . . . . . . .
        . . . . . . . . . .
        . . . . . . . . . .
        . . . . . . . . . .
        . . . . . . r1 . . .
        . . . . . r2 b3 . . .
        . . r4 . . . b1 . . .
        """,
        max_plies=30,
    )
    g = new_game(client, red="human", blue="greedy", state=state.to_dict(), seed=1)
    assert g["state"] == state.to_dict() and g["colonies"][0]["cells"] == [46, 55, 56]
    landing = g["legal"]["sources"]["62"]["66"]  # c4 onto g4 (docs/rules.md R10)
    assert landing["kind"] == "displacement" and 11174 in [a["action"] for a in landing["actions"]]
    v = client.post(f"/api/games/{g['id']}/move", json={"move": "c4-g4>h3"}).json()
    assert v["actions"] == [11174] and v["last"] == {"notation": "c4-g4>h3", "from": 62, "to": 66, "push": 77}
    bad = dict(state.to_dict(), grace_left=2)
    assert "grace_left" in error_of(client.post("/api/games", json={"state": bad}), 400)
    assert "not both" in error_of(client.post("/api/games", json={"state": state.to_dict(), "max_plies": 9}), 400)
    over = dict(state.to_dict(), passes=2)
    assert "game is over (passes)" in error_of(client.post("/api/games", json={"state": over}), 400)


def test_illegal_move_is_explained_by_the_engine_and_changes_nothing(client):
    g = new_game(client, red="human", blue="human", seed=3)
    before = client.get(f"/api/games/{g['id']}").json()
    msg = error_of(client.post(f"/api/games/{g['id']}/move", json={"move": "a1-a2"}), 400)
    assert msg == "illegal action 2880 (a1-a2) for red: a1 is empty: there is no satellite there to move (R4)"
    msg = error_of(client.post(f"/api/games/{g['id']}/move", json={"action": ce.PASS_ACTION}), 400)
    assert "(R4.3)" in msg
    assert "cannot read" in error_of(client.post(f"/api/games/{g['id']}/move", json={"move": "e4 to e5"}), 400)
    assert client.get(f"/api/games/{g['id']}").json() == before


def test_explain_a_click_in_the_engines_words(client):
    g = new_game(client, red="human", blue="human", seed=3)  # board of seed 3: blue b4 on a8, red r4 on c10
    gid = g["id"]
    assert client.get(f"/api/games/{gid}/explain?from=a8").json()["message"] == "a8 holds an opposing satellite; red is to move (R4)"
    assert client.get(f"/api/games/{gid}/explain?from=a1").json()["message"] == "a1 is empty: there is no satellite there to move (R4)"
    far = client.get(f"/api/games/{gid}/explain?from=c10&to=d7").json()["message"]
    assert far == "d7 is not 1..4 cells from c10 along one of the 8 directions (R4.1)"
    assert "(R4.1)" in client.get(f"/api/games/{gid}/explain?from=c10&to=d10").json()["message"]  # occupied
    assert "click one of its highlighted targets" in client.get(f"/api/games/{gid}/explain?from=c10").json()["message"]
    assert "not a cell" in error_of(client.get(f"/api/games/{gid}/explain?from=z9"), 400)
    assert "needs ?from=CELL" in error_of(client.get(f"/api/games/{gid}/explain"), 400)


def test_undo_takes_back_the_agents_reply_and_the_human_move(client):
    g = new_game(client, red="human", blue="random", seed=11)
    assert "nothing to undo" in error_of(client.post(f"/api/games/{g['id']}/undo"), 409)
    client.post(f"/api/games/{g['id']}/move", json={"action": first_legal(g)})
    v = client.post(f"/api/games/{g['id']}/step").json()
    assert len(v["actions"]) == 2
    v = client.post(f"/api/games/{g['id']}/undo").json()
    assert v["actions"] == [] and v["state"] == g["state"] and v["legal"] == g["legal"]


def test_full_game_between_agents_is_saved_in_the_output_folder_only(client, out_dir):
    g = new_game(client, red="random", blue="greedy", seed=2, max_plies=12)
    v = g
    while not v["over"]:
        v = client.post(f"/api/games/{g['id']}/step").json()
    assert v["end_reason"] == "ply_limit" and len(v["moves"]) == 12 and v["saved"] == str(out_dir / RECORD_FILE)
    assert error_of(client.post(f"/api/games/{g['id']}/step"), 409).startswith("the game is over")
    saved = [json.loads(line) for line in (out_dir / RECORD_FILE).read_text().splitlines()]
    rec = GameRecord.from_json(next(r for r in saved if r["actions"] == v["actions"]))
    assert rec.agents == {"red": "random", "blue": "greedy"} and rec.replay()[-1].to_dict() == v["state"]
    assert rec.result == v["result"] and rec.meta["seed"] == 2


def test_resign_ends_the_game_and_records_it(client, out_dir):
    g = new_game(client, red="random", blue="human", seed=4)
    assert "only a human side can resign" in error_of(client.post(f"/api/games/{g['id']}/resign", json={"colour": "red"}), 409)
    assert "'red' or 'blue'" in error_of(client.post(f"/api/games/{g['id']}/resign", json={"colour": "green"}), 400)
    v = client.post(f"/api/games/{g['id']}/resign", json={"colour": "blue"}).json()
    assert v["over"] and v["result"] == "red" and v["end_reason"] == "resignation" and v["legal"] is None
    last = json.loads((out_dir / RECORD_FILE).read_text().splitlines()[-1])
    assert last["result"] == "red" and last["end_reason"] == "resignation" and last["meta"]["resigned"] == "blue"
    assert "over" in error_of(client.post(f"/api/games/{g['id']}/move", json={"action": 0}), 409)


def test_two_games_at_once_stay_apart(client):
    a = new_game(client, red="random", blue="random", seed=21, max_plies=8)
    b = new_game(client, red="mcts:30", blue="greedy", seed=22, max_plies=8)
    results: dict[str, dict] = {}

    def play_out(g: dict) -> None:
        v = g
        while not v["over"]:
            r = client.post(f"/api/games/{g['id']}/step")
            assert r.status_code == 200, r.text
            v = r.json()
        results[g["id"]] = v

    threads = [threading.Thread(target=play_out, args=(g,)) for g in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(THINK_LIMIT)
    for g in (a, b):
        v = results[g["id"]]
        assert v["players"] == g["players"] and len(v["actions"]) == 8
        s = ce.new_game(g["seed"], max_plies=8)
        for act in v["actions"]:
            s = ce.apply_action(s, act)
        assert s.to_dict() == v["state"]
    same_seed = new_game(client, red="random", blue="random", seed=21, max_plies=8)  # reproducible from the seed
    v = same_seed
    while not v["over"]:
        v = client.post(f"/api/games/{same_seed['id']}/step").json()
    assert v["actions"] == results[a["id"]]["actions"]


def test_agent_past_the_time_limit_is_stopped_and_the_server_goes_on(out_dir):
    app = create_app(WebConfig(out_dir=out_dir, workers=1, think_limit=1.0))
    with TestClient(app) as c:
        # Long enough to pass the 1 s limit by far (tens of seconds), small enough to allocate: the search's
        # arrays grow with the simulations (10**8 of them failed with MemoryError; now past MAX_SIMULATIONS).
        g = c.post("/api/games", json={"red": "mcts:300000", "blue": "human", "seed": 1}).json()
        msg = error_of(c.post(f"/api/games/{g['id']}/step"), 504)
        assert "time limit of 1 s" in msg
        v = c.get(f"/api/games/{g['id']}").json()
        assert v["actions"] == [] and not v["thinking"]
        h = c.post("/api/games", json={"red": "human", "blue": "random", "seed": 1})  # the replaced worker serves
        assert h.status_code == 201, h.text



def test_a_thread_waiting_on_a_stopped_worker_ends_within_a_slice():
    """The server's exit waits for its executor threads: one blocked on a closed pipe must not hold it up."""
    import multiprocessing as mp
    from concurrent.futures import ThreadPoolExecutor

    from colony_web import thinker

    ours, theirs = mp.Pipe()
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(thinker._wait, ours, 60.0)
        time.sleep(0.3)
        t0 = time.monotonic()
        ours.close()
        with pytest.raises(OSError):
            waiting.result(timeout=10)
        assert time.monotonic() - t0 < 2 * thinker.POLL_SLICE + 1
    theirs.close()


def test_a_job_stopped_by_shutdown_is_a_thinker_closed_and_starts_no_new_process():
    import asyncio

    from colony_web import thinker

    async def scenario() -> tuple[BaseException | None, int]:
        t = thinker.Thinker(1, 60.0)
        first = t._workers[0]
        packed = ce.new_game(1).to_array()
        job = asyncio.ensure_future(t.run("act", spec="mcts:300000", packed=packed, seed=1))
        await asyncio.sleep(0)
        while not t._workers[0].ready:  # the worker started and took the job
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)
        t.interrupt()
        try:
            await asyncio.wait_for(job, 10)
            err = None
        except BaseException as e:  # noqa: BLE001
            err = e
        with pytest.raises(thinker.ThinkerClosed):  # later jobs do not start
            await t.run("check_spec", spec="random")
        same = t._workers[0] is first
        t.close()
        return err, same

    err, same = asyncio.run(scenario())
    assert isinstance(err, thinker.ThinkerClosed), repr(err)
    assert same  # no replacement process was started while the server goes away

# --- bad input ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "body, fragment",
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (json.dumps({"red": "random", "colour": "x"}).encode(), "unknown field(s) ['colour']"),
        (json.dumps({"red": "mcts:lots"}).encode(), "red player: MCTS spec 'mcts:lots'"),
        # numbers past what a search can hold were accepted here and ended the first step in a 502
        (json.dumps({"red": "mcts:99999999999999999999"}).encode(), "must be an integer in 1..1000000"),
        (json.dumps({"blue": "zero:az:10:m=99999999999999999999"}).encode(), "blue player: checkpoint spec "
         "'zero:az:10:m=99999999999999999999': m: must be an integer in 1..1921"),
        (json.dumps({"blue": "alphago"}).encode(), "unknown agent spec 'alphago'; allowed agent specs"),
        (json.dumps({"red": "checkpoint:/no/such.pt"}).encode(), "cannot load checkpoint '/no/such.pt': no readable checkpoint file at that path"),
        (json.dumps({"seed": -1}).encode(), "field 'seed' must be an integer"),
        (json.dumps({"seed": "7"}).encode(), "field 'seed' must be an integer"),
        (json.dumps({"max_plies": 0}).encode(), "field 'max_plies' must be an integer in 1..10000"),
        (json.dumps({"red": 3}).encode(), "field 'red' must be a non-empty string"),
    ],
)
def test_bad_new_game_requests_get_one_line_400s(client, body, fragment):
    msg = error_of(client.post("/api/games", content=body), 400)
    assert fragment in msg


def test_corrupt_checkpoint_is_a_400(client, tmp_path):
    bad = tmp_path / "broken.pt"
    bad.write_bytes(b"this is not a torch file")
    msg = error_of(client.post("/api/games", json={"red": f"checkpoint:{bad}"}), 400)
    assert msg.startswith(f"red player: cannot load checkpoint '{bad}'")
    msg = error_of(client.post("/api/analyse", json={"analyser": f"checkpoint:{bad}", "state": ce.new_game(0).to_dict()}), 400)
    assert msg.startswith(f"cannot load checkpoint '{bad}'")
    assert client.post("/api/games", json={"red": "random"}).status_code == 201  # the server goes on


def test_unknown_ids_oversized_bodies_and_wrong_methods(client):
    assert "no game 'nope'" in error_of(client.get("/api/games/nope"), 404)
    assert "no record file" in error_of(client.get("/api/records/nope"), 404)
    big = b"{" + b" " * (MAX_JSON_BYTES + 1) + b"}"
    assert "over the limit" in error_of(client.post("/api/games", content=big), 413)
    assert client.get("/api/games").status_code == 405
    g = new_game(client, red="human", blue="human", seed=1)
    assert "exactly one of 'action'" in error_of(client.post(f"/api/games/{g['id']}/move", json={}), 400)
    assert "0..16000" in error_of(client.post(f"/api/games/{g['id']}/move", json={"action": 16001}), 400)
    assert "0..16000" in error_of(client.post(f"/api/games/{g['id']}/move", json={"action": True}), 400)


# --- records ------------------------------------------------------------------------
def recorded_games(n: int, max_plies: int = 20) -> list[GameRecord]:
    out = []
    for seed in range(n):
        rng = np.random.default_rng(seed)
        s = ce.new_game(seed, max_plies=max_plies)
        initial, actions = s, []
        while not s.is_over:
            ids = ce.legal_actions(s)
            actions.append(int(ids[rng.integers(len(ids))]))
            s = ce.apply_action(s, actions[-1])
        out.append(GameRecord.from_game(initial, actions, {"red": "random", "blue": "random"}, meta={"seed": seed}))
    return out


def upload(client, text: str | bytes, name: str = "games.jsonl"):
    return client.post(f"/api/records?name={name}", content=text.encode() if isinstance(text, str) else text)


def test_record_upload_and_replay(client):
    recs = recorded_games(2)
    text = "\n".join(json.dumps(r.to_json()) for r in recs) + "\n"
    r = upload(client, text)
    assert r.status_code == 201, r.text
    summary = r.json()
    assert [g["plies"] for g in summary["games"]] == [len(x.actions) for x in recs]
    game = client.get(f"/api/records/{summary['id']}/games/1").json()
    assert len(game["positions"]) == len(recs[1].actions) + 1 and game["moves"] == recs[1].moves
    assert game["positions"][-1]["state"] == recs[1].final_state and game["last"][0] is None
    assert game["last"][-1]["notation"] == recs[1].moves[-1]
    assert "out of range" in error_of(client.get(f"/api/records/{summary['id']}/games/2"), 404)
    info = client.get("/api/info").json()
    assert summary["id"] in [f["id"] for f in info["records"]]


def test_record_files_kept_are_bounded(client):
    from colony_web.app import MAX_RECORD_FILES

    text = json.dumps(recorded_games(1, max_plies=4)[0].to_json())
    ids = [upload(client, text, f"f{i}.jsonl").json()["id"] for i in range(MAX_RECORD_FILES + 1)]
    assert client.get(f"/api/records/{ids[-1]}").status_code == 200
    assert "upload it again" in error_of(client.get(f"/api/records/{ids[0]}"), 404)
    assert len(client.get("/api/info").json()["records"]) == MAX_RECORD_FILES


def test_corrupt_records_are_named_with_their_line(client):
    good = json.dumps(recorded_games(1)[0].to_json())
    assert error_of(upload(client, good + "\n{oops\n", "x.jsonl"), 400).startswith("x.jsonl:2: not valid JSON")
    assert "missing field(s)" in error_of(upload(client, '{"actions": []}\n', "y.jsonl"), 400)
    assert "holds no game records" in error_of(upload(client, "\n\n", "z.jsonl"), 400)
    assert "not UTF-8" in error_of(upload(client, b"\xff\xfe\x00", "w.jsonl"), 400)
    tampered = recorded_games(1)[0].to_json()
    tampered["actions"][3] = ce.PASS_ACTION
    tampered["final_state"] = None
    rid = upload(client, json.dumps(tampered), "t.jsonl").json()["id"]
    msg = error_of(client.get(f"/api/records/{rid}/games/0"), 400)
    assert msg.startswith("t.jsonl game 0: action 4 of") and "(R4.3)" in msg


def test_records_named_on_the_command_line_are_offered(tmp_path):
    path = write_records(tmp_path / "eval" / "games.jsonl", recorded_games(3, max_plies=6))
    (tmp_path / "eval" / "broken.jsonl").write_text("nope\n")
    app = create_app(WebConfig(out_dir=tmp_path / "out", workers=1, records=[path.parent]))
    with TestClient(app) as c:
        info = c.get("/api/info").json()
        assert [(f["name"], len(f["games"])) for f in info["records"]] == [("games.jsonl", 3)]
        assert len(info["load_errors"]) == 1 and "broken.jsonl:1: not valid JSON" in info["load_errors"][0]
    assert not (tmp_path / "out").exists()  # nothing finished, nothing written


# --- analysis -----------------------------------------------------------------------
def test_policy_analysis_matches_the_checkpoint(client):
    from colony_training.agents import load_policy_agent

    state = ce.apply_action(ce.new_game(9), int(ce.legal_actions(ce.new_game(9))[0]))
    r = client.post("/api/analyse", json={"analyser": f"checkpoint:{CHECKPOINT}", "state": state.to_dict(), "top": 5})
    assert r.status_code == 200, r.text
    a = r.json()
    ids, probs, value = load_policy_agent(CHECKPOINT).policy(state)
    order = np.argsort(-probs, kind="stable")[:5]
    assert [m["action"] for m in a["policy"]] == [int(ids[i]) for i in order]
    assert [m["prob"] for m in a["policy"]] == pytest.approx([float(probs[i]) for i in order], abs=1e-6)
    from colony_training.checkpoint import read_checkpoint
    from colony_training.ppo.shaping import mover_potential

    scale = read_checkpoint(CHECKPOINT)["config"]["shaping_scale"]
    assert a["shaping_scale"] == scale > 0 and a["value_head"] == pytest.approx(value, abs=1e-6)
    phi = float(mover_potential(state.to_array()[None], scale)[0])  # the head learns V - Phi (shaping.py)
    assert a["value"] == pytest.approx(np.clip(value + phi, -1, 1), abs=1e-6)
    assert a["search"] is None and a["to_move"] == "blue"
    assert all(m["notation"] == ce.action_to_str(m["action"], state) for m in a["policy"])


def test_search_analysis_reports_the_roots_visits(client):
    state = ce.new_game(9)
    a = client.post("/api/analyse", json={"analyser": "mcts:60", "state": state.to_dict(), "top": 50}).json()
    assert a["policy"] is None and a["value"] is None and a["search"]["simulations"] == 60
    visits = [m["visits"] for m in a["search"]["moves"]]
    assert visits == sorted(visits, reverse=True) and visits[0] >= 1
    legal = {int(x) for x in ce.legal_actions(state)}
    assert all(m["action"] in legal for m in a["search"]["moves"])


def test_value_graph_from_states_and_from_a_game(client):
    g = new_game(client, red="random", blue="random", seed=6, max_plies=4)
    v = g
    while not v["over"]:
        v = client.post(f"/api/games/{g['id']}/step").json()
    spec = f"checkpoint:{CHECKPOINT}"
    by_game = client.post("/api/values", json={"analyser": spec, "game": g["id"], "from": 0}).json()["red_values"]
    assert len(by_game) == 5 and by_game[-1] == {"red": 1.0, "blue": -1.0, "draw": 0.0}[v["result"]]
    assert all(-1.0 <= x <= 1.0 for x in by_game)
    first = client.post("/api/values", json={"analyser": spec, "states": [g["state"]]}).json()["red_values"]
    assert first == pytest.approx(by_game[:1])
    assert "no value head" in error_of(client.post("/api/values", json={"analyser": "mcts:5", "states": [g["state"]]}), 400)


@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"analyser": "random", "state": None}, "state is not a valid position (docs/rules.md R9): a state must be a dict"),
        ({"analyser": "random"}, "field 'state' is required"),
        ({"state": {}}, "field 'analyser' must be a non-empty string"),
        ({"analyser": "random", "state": {"board": []}}, "missing field(s)"),
        ({"analyser": "random", "state": "SENTINEL"}, "offers nothing to analyse"),
        ({"analyser": "mcts:5", "state": "SENTINEL", "top": 0}, "field 'top' must be an integer in 1..50"),
    ],
)
def test_bad_analysis_requests(client, body, fragment):
    body = {k: (ce.new_game(0).to_dict() if v == "SENTINEL" else v) for k, v in body.items()}
    msg = error_of(client.post("/api/analyse", json=body), 400)
    assert fragment in msg


def test_analysis_of_a_finished_position_is_refused(client):
    s = ce.new_game(0, max_plies=1)
    s = ce.apply_action(s, int(ce.legal_actions(s)[0]))
    assert "game is over" in error_of(client.post("/api/analyse", json={"analyser": "mcts:5", "state": s.to_dict()}), 400)


def test_page_and_static_files_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and '<svg id="board"' in page.text
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/static/nope.js").status_code == 404


def test_legal_view_marks_connection_moves_and_displacements():
    from helpers import random_game

    # a position deep in a random game has connections unlocked: connection moves or displacements appear
    for seed in range(20):
        kinds = set()
        for s in random_game(seed)[::5]:
            if s.is_over:
                continue
            for ts in legal_view(s)["sources"].values():
                for dst, t in ts.items():
                    kinds.add(t["kind"])
                    for choice in t["actions"]:
                        after = ce.apply_action(s, choice["action"])
                        src = ce.parse_cell(ce.action_to_str(choice["action"], s).split("-")[0])
                        assert after.board.flat[int(dst)] == s.board.flat[src]  # the mover lands on the target
                        assert ce.connected_mask(after).flat[int(dst)] == (t["kind"] != "normal")  # R4.1, R4.2.5
        if {"connection", "displacement"} <= kinds:
            return
    pytest.fail("no connection move and displacement in 20 random games")


# --- command line -------------------------------------------------------------------
def test_cli_warns_when_bound_beyond_this_machine(monkeypatch, tmp_path, capsys):
    served = {}
    monkeypatch.setattr(cli, "serve", lambda app, host, port: served.update(host=host, port=port))
    monkeypatch.setattr(cli, "bind_problem", lambda host, port: None)  # port 9999 may be taken on this machine
    assert cli.main(["--host", "0.0.0.0", "--port", "9999", "--out", str(tmp_path / "o"), "--checkpoint", str(CHECKPOINT)]) == 0
    err = capsys.readouterr().err
    assert served == {"host": "0.0.0.0", "port": 9999} and "warning: bound to 0.0.0.0" in err
    assert cli.main(["--out", str(tmp_path / "o"), "--checkpoint", str(CHECKPOINT)]) == 0
    assert served["host"] == "127.0.0.1" and "warning" not in capsys.readouterr().err
    assert cli.is_loopback("::1") and cli.is_loopback("localhost") and not cli.is_loopback("example.org")


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--port", "0"], "--port must be in 1..65535"),
        (["--records", "/no/such/file.jsonl"], "--records '/no/such/file.jsonl' does not exist"),
        (["--checkpoint", "/no/such.pt"], "is not a file"),
        (["--workers", "0"], "--workers must be in 1..64"),
        (["--think-limit", "-1"], "--think-limit must be > 0"),
    ],
)
def test_cli_bad_options_are_one_line_errors(argv, fragment, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("colony-web: error:") and fragment in err and "\n" not in err


def test_cli_says_in_one_line_why_it_cannot_serve_or_save_before_it_starts(monkeypatch, tmp_path, capsys):
    """A port in use, a host name that does not resolve and an --out that cannot be written were found only by
    uvicorn after "open http://..." (its own log line, exit status 3) or at the end of the first game."""
    import socket

    monkeypatch.setattr(cli, "serve", lambda app, host, port: pytest.fail("served despite the problem"))
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for argv, fragment in [
            (["--port", str(port), "--no-save"], f"cannot listen on 127.0.0.1 port {port}: "),
            (["--host", "no-such-host.invalid", "--no-save"], "--host 'no-such-host.invalid' is not an address"),
            (["--out", str(blocker / "web")], f"--out: cannot write into '{blocker / 'web'}'"),
        ]:
            assert cli.main(argv) == 2
            out, err = capsys.readouterr()
            assert err.startswith("colony-web: error:") and fragment in err and err.count("\n") == 1
            assert "open http" not in out
    assert cli.bind_problem("127.0.0.1", port) is None  # free again once closed


def test_network_guided_search_analysis_reports_visits(client):
    from colony_training.eval.agent_specs import AgentSpecError, parse_agent_spec

    spec = f"checkpoint:{CHECKPOINT}:az:8"
    try:
        parse_agent_spec(spec)
    except AgentSpecError:
        pytest.skip("this checkout's agent specs have no checkpoint:PATH:az:N form yet")
    state = ce.new_game(9)
    r = client.post("/api/analyse", json={"analyser": spec, "state": state.to_dict(), "top": 50})
    assert r.status_code == 200, r.text
    a = r.json()
    assert a["search"]["simulations"] == 8 and a["policy"] is not None and a["value"] is not None
    legal = {int(x) for x in ce.legal_actions(state)}
    assert all(m["action"] in legal and m["visits"] >= 1 for m in a["search"]["moves"])


def test_records_held_are_bounded_in_games_and_bytes(client, monkeypatch):
    from colony_web import store

    text = "".join(json.dumps(r.to_json()) + "\n" for r in recorded_games(3, max_plies=6))
    monkeypatch.setattr(store, "MAX_HELD_GAMES", 7)
    first, second = (upload(client, text, f"g{i}.jsonl").json()["id"] for i in range(2))
    third = upload(client, text + text[: text.index("\n") + 1], "g2.jsonl")  # 4 games: the oldest file goes
    assert third.status_code == 201 and client.app.state.colony.records.held_games <= 7
    assert "upload it again" in error_of(client.get(f"/api/records/{first}"), 404)
    assert client.get(f"/api/records/{second}").status_code == 200
    assert "holds more than 7 games" in error_of(upload(client, text * 3, "big.jsonl"), 413)
    monkeypatch.setattr(store, "MAX_HELD_BYTES", 5000)
    assert "over the limit of 5000 bytes" in error_of(upload(client, text * 2, "wide.jsonl"), 413)
    monkeypatch.setattr(store, "MAX_UPLOAD_BYTES", 100)
    assert "over the limit of 100 bytes for one record file" in error_of(upload(client, text, "long.jsonl"), 413)


def test_the_same_record_file_uploaded_twice_is_held_once(client):
    text = json.dumps(recorded_games(1, max_plies=4)[0].to_json())
    a = upload(client, text, "twice.jsonl")
    b = upload(client, text, "twice.jsonl")
    assert (a.status_code, b.status_code) == (201, 200) and a.json()["id"] == b.json()["id"]
    assert [f["name"] for f in client.get("/api/info").json()["records"]].count("twice.jsonl") == 1


def test_a_finished_game_cannot_be_undone_and_is_recorded_once(client, out_dir):
    def lines() -> int:
        path = out_dir / RECORD_FILE
        return len(path.read_text().splitlines()) if path.exists() else 0

    g = new_game(client, red="random", blue="greedy", seed=8, max_plies=4)  # a watched game, played out
    v = g
    while not v["over"]:
        v = client.post(f"/api/games/{g['id']}/step").json()
    saved = lines()
    assert "recorded as it ended" in error_of(client.post(f"/api/games/{g['id']}/undo"), 409)
    assert error_of(client.post(f"/api/games/{g['id']}/step"), 409).startswith("the game is over")
    h = new_game(client, red="human", blue="random", seed=9)
    client.post(f"/api/games/{h['id']}/move", json={"action": first_legal(h)})
    client.post(f"/api/games/{h['id']}/step")
    assert client.post(f"/api/games/{h['id']}/resign", json={"colour": "red"}).json()["over"]
    assert lines() == saved + 1
    assert "red resigned" in error_of(client.post(f"/api/games/{h['id']}/undo"), 409)
    assert lines() == saved + 1 and client.get(f"/api/games/{h['id']}").json()["resigned"] == "red"
    rec = client.get(f"/api/games/{h['id']}/record").json()  # the page's Download
    assert rec["end_reason"] == "resignation" and len(rec["actions"]) == 2


def test_the_shipped_agents_are_offered_by_name(client):
    info = client.get("/api/info").json()
    assert {"zero", "zero:az:200", "ppo", "mcts:200", "greedy", "random"} <= set(info["agents"])
    assert info["analysers"][:3] == ["zero", "zero:az:200", "ppo"]


def test_zero_analysis_has_ownership_and_a_line(client):
    state = ce.new_game(9)
    a = client.post("/api/analyse", json={"analyser": "zero:az:8", "state": state.to_dict(), "top": 5}).json()
    assert len(a["ownership"]) == 100 and all(-1 <= v <= 1 for v in a["ownership"])
    assert len(a["pv"]) >= 3 and a["best"] == a["pv"][0]["notation"]
    movers = [m["mover"] for m in a["pv"]]
    assert movers[:2] == ["red", "blue"]
    for m in a["pv"]:  # a legal line from the position
        state = ce.apply_action(state, m["action"])
    assert client.post("/api/analyse", json={"analyser": "ppo", "state": ce.new_game(9).to_dict()}).json()["ownership"] is None
    state, rng = ce.new_game(1), np.random.default_rng(1)
    for _ in range(80):  # a middle game where the head is far enough from 0 that tanh is not the identity
        state = ce.apply_action(state, int(rng.choice(ce.legal_actions(state))))
    z = client.post("/api/analyse", json={"analyser": "zero", "state": state.to_dict()}).json()
    assert z["shaping_scale"] == 0 and abs(z["value_head"]) > 0.3
    assert z["value"] == pytest.approx(np.tanh(z["value_head"]), abs=1e-6)  # colony-zero fits tanh(head)


def test_stop_plays_the_searchs_best_move_so_far(client):
    from colony_web.app import quick_spec

    assert quick_spec("zero:az:200") == "zero:az:25" and quick_spec("checkpoint:/a:mcts:3/b.pt:mcts:16").endswith(":mcts:2")
    assert quick_spec("zero") is None and quick_spec("greedy") is None
    g = new_game(client, red="mcts:400000", blue="human", seed=4)  # minutes of search, its quick pass seconds
    assert "nothing to stop" in error_of(client.post(f"/api/games/{g['id']}/stop"), 409)
    replies = []
    thinking = threading.Thread(target=lambda: replies.append(client.post(f"/api/games/{g['id']}/step")))
    thinking.start()
    deadline = time.monotonic() + THINK_LIMIT
    while not (v := client.get(f"/api/games/{g['id']}").json())["stoppable"]:
        assert (v["thinking"] or not replies) and time.monotonic() < deadline  # (the step may not have begun)
        time.sleep(0.2)
    best = v["best_so_far"]
    r = client.post(f"/api/games/{g['id']}/stop")
    assert r.status_code == 200 and r.json()["plays"] == best
    thinking.join(60)
    assert not thinking.is_alive() and replies[0].status_code == 200, replies
    v = replies[0].json()
    assert v["moves"] == [best] and not v["thinking"] and v["best_so_far"] is None
    h = client.post("/api/games", json={"red": "mcts:20", "blue": "human", "seed": 1}).json()  # workers serve on
    assert client.post(f"/api/games/{h['id']}/step").status_code == 200


@pytest.mark.parametrize("how", ["undo", "resign"])
def test_undo_and_resign_while_the_agent_thinks_end_its_search_unplayed(client, out_dir, how):
    g = new_game(client, red="human", blue="mcts:400000", seed=6)  # minutes of search
    first = first_legal(g)
    client.post(f"/api/games/{g['id']}/move", json={"action": first})
    replies = []
    thinking = threading.Thread(target=lambda: replies.append(client.post(f"/api/games/{g['id']}/step")))
    thinking.start()
    deadline = time.monotonic() + THINK_LIMIT
    while not client.get(f"/api/games/{g['id']}").json()["thinking"]:
        assert time.monotonic() < deadline and not replies
        time.sleep(0.1)
    started = time.monotonic()
    if how == "undo":
        v = client.post(f"/api/games/{g['id']}/undo").json()
        assert v["actions"] == [] and v["legal"] is not None
    else:
        v = client.post(f"/api/games/{g['id']}/resign", json={"colour": "red"}).json()
        assert v["over"] and v["result"] == "blue" and v["actions"] == [first]
    assert time.monotonic() - started < 30  # not the minutes of the search
    thinking.join(60)
    assert replies[0].status_code == 200 and replies[0].json()["actions"] == [first]  # the agent played nothing
    assert client.get(f"/api/games/{g['id']}").json()["actions"] == v["actions"]
