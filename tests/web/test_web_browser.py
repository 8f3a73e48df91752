"""The web page in a real headless browser: Debian's Chromium driven by Selenium (no browser download).

A `colony-web` server runs as a subprocess in a temporary folder; the tests click through
a whole game against `random`, step a recorded game to the end with the keyboard, and
open the analysis of the shipped checkpoint. They assert what the page shows against
the server's API and the engine.

Screenshots go to the test's temporary folder, or to $COLONY_WEB_SCREENSHOTS when set;
docs/web.md's pictures are made with

    COLONY_WEB_SCREENSHOTS=docs python -m pytest tests/web/test_web_browser.py
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the web extra (starlette, uvicorn) is not installed")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

import colony_env as ce
from colony_env.agents import GreedyAgent, RandomAgent
from colony_training.eval.records import GameRecord, write_records

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = "checkpoints/colony_ppo.pt"
CHECKPOINT = ROOT / SHIPPED
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage",
                  "--window-size=1280,900")
SERVER_START_SECONDS = 120
WAIT_SECONDS = 120  # an agent's first move may compile the search kernels in a fresh worker
PLAY_PLIES = 24  # the clicked game ends by the ply limit (R6.2.4) unless it ends sooner
SCREENSHOT_ENV = "COLONY_WEB_SCREENSHOTS"
GRACE_GAME_PLIES = 98
GRACE_PLY = 96  # red finished, blue has 2 grace moves left
ANALYSED_PLY = 92  # red to move with 3 colonies; the policy spreads over several moves


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=WAIT_SECONDS) as r:
        return json.loads(r.read())


def greedy_record(seed: int, plies: int) -> GameRecord:
    """A game of greedy (red) against random (blue): red builds colonies, so the board has something to show."""
    agents, rng = (GreedyAgent(), RandomAgent()), np.random.default_rng(seed)
    state = initial = ce.new_game(seed, max_plies=plies)
    actions = []
    while not state.is_over:
        actions.append(int(agents[state.to_move].act(state, rng)))
        state = ce.apply_action(state, actions[-1])
    return GameRecord.from_game(initial, actions, {"red": "greedy", "blue": "random"}, meta={"seed": seed})


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("web_browser")


@pytest.fixture(scope="module")
def record(workdir) -> GameRecord:
    rec = greedy_record(seed=2, plies=200)  # red finishes at ply 95; blue's grace moves end the game at ply 98
    assert len(rec.actions) == GRACE_GAME_PLIES and rec.end_reason == "grace"
    write_records(workdir / "input" / "greedy.jsonl", [rec])
    return rec


@pytest.fixture(scope="module")
def server(workdir, record):
    port = _free_port()
    # as a user in a checkout: the shipped checkpoint under checkpoints/ is found and offered by default
    (workdir / "checkpoints").mkdir()
    shutil.copy(CHECKPOINT, workdir / SHIPPED)
    cmd = [sys.executable, "-m", "colony_web", "--port", str(port), "--out", "out", "--records", "input",
           "--workers", "2", "--think-limit", "300"]
    log = (workdir / "server.log").open("w")
    proc = subprocess.Popen(cmd, cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_START_SECONDS
    while True:
        try:
            _get(url + "/api/info")
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"colony-web did not start: {(workdir / 'server.log').read_text()[-2000:]}")
            time.sleep(0.3)
    yield url
    proc.terminate()
    proc.wait(30)
    log.close()


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} / {CHROMEDRIVER} missing: .ci/run installs them with apt-get")
        pytest.skip("Debian chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    try:
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    except WebDriverException as e:
        pytest.fail(f"cannot start headless chromium: {str(e).splitlines()[0]}")
    yield driver
    driver.quit()


def wait(driver, cond, timeout: float = WAIT_SECONDS, what: str = ""):
    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(lambda d: cond(d), message=what)


def text(driver, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).text


def click_cell(driver, name: str) -> None:
    """Click a cell; if the board was redrawn between finding and clicking (a stale element), find it again."""

    def attempt(d) -> bool:
        try:
            d.find_element(By.CSS_SELECTOR, f'rect.hit[data-cell="{name}"]').click()
            return True
        except StaleElementReferenceException:
            return False

    wait(driver, attempt, what=f"a click on {name}")


def first_cell(driver, css: str) -> str:
    """The `data-cell` of the first element matching `css`; if the board was redrawn between finding it and reading
    it (a stale element), find it again, as `click_cell` does."""
    found: list[str] = []

    def attempt(d) -> bool:
        try:
            found.append(d.find_elements(By.CSS_SELECTOR, css)[0].get_attribute("data-cell"))
            return True
        except (StaleElementReferenceException, IndexError):
            return False

    wait(driver, attempt, what=f"an element {css}")
    return found[-1]


def screenshot(driver, workdir: Path, name: str) -> Path:
    folder = Path(os.environ.get(SCREENSHOT_ENV) or workdir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 10_000  # a real picture, not a blank page
    return path


def board_on_page(driver) -> dict[str, str]:
    """cell -> 'r3' / 'b2' for every satellite drawn."""
    out = {}
    for g in driver.find_elements(By.CSS_SELECTOR, "g.sat"):
        colour = "r" if "red" in g.get_attribute("class").split() else "b"
        out[g.get_attribute("data-cell")] = colour + g.text
    return out


def board_of(state: ce.GameState) -> dict[str, str]:
    return {ce.cell_name(i): ("r" if v > 0 else "b") + str(abs(int(v))) for i, v in enumerate(state.board.flat) if v}


def page_game(driver) -> dict:
    return driver.execute_script("return ui.game")


def ready_for_click(driver) -> bool:
    g = page_game(driver)
    return bool(g) and not driver.execute_script("return ui.busy") and (g["over"] or g["legal"] is not None)


# --- play --------------------------------------------------------------------------------
def test_full_game_against_random_by_clicking(browser, server, workdir):
    browser.get(f"{server}/?red=human&blue=random&seed=3&max-plies={PLAY_PLIES}")
    wait(browser, ready_for_click, what="the new game")
    assert "red: human \u00b7 blue: random \u2014 red to move" in text(browser, "status")

    # illegal clicks explain themselves with the engine's message and rule number
    click_cell(browser, "a8")  # seed 3: a blue satellite
    wait(browser, lambda d: "R4" in text(d, "message"), 30)
    assert text(browser, "message") == "a8 holds an opposing satellite; red is to move (R4)"
    click_cell(browser, "c10")
    click_cell(browser, "d7")
    wait(browser, lambda d: "R4.1" in text(d, "message"), 30)
    assert text(browser, "message") == "d7 is not 1..4 cells from c10 along one of the 8 directions (R4.1)"

    rng = np.random.default_rng(0)
    human_moves = 0
    while True:
        wait(browser, ready_for_click, what="the agent's reply")
        game = page_game(browser)
        if game["over"]:
            break
        if game["legal"]["pass"] is not None:
            browser.find_element(By.ID, "pass").click()
            human_moves += 1
            continue
        movable = browser.find_elements(By.CSS_SELECTOR, "g.sat.movable")
        assert sorted(int(ce.parse_cell(m.get_attribute("data-cell"))) for m in movable) == sorted(
            int(s) for s in game["legal"]["sources"])
        src = movable[rng.integers(len(movable))].get_attribute("data-cell")
        click_cell(browser, src)
        shown = {t.get_attribute("data-cell"): t.get_attribute("data-kind")
                 for t in browser.find_elements(By.CSS_SELECTOR, ".target")}
        api = _get(f"{server}/api/games/{game['id']}")["legal"]["sources"][str(ce.parse_cell(src))]
        assert shown == {ce.cell_name(int(to)): t["kind"] for to, t in api.items()}  # every legal target, by kind
        dst = sorted(shown)[rng.integers(len(shown))]
        click_cell(browser, dst)
        if shown[dst] == "displacement":
            pushes = browser.find_elements(By.CSS_SELECTOR, ".target-push")
            assert len(pushes) == len(api[str(ce.parse_cell(dst))]["actions"])
            click_cell(browser, pushes[0].get_attribute("data-cell"))
        human_moves += 1
        played = len(game["moves"]) + 1
        wait(browser, lambda d, n=played: len(page_game(d)["moves"]) >= n, what="the move")

    game = page_game(browser)
    final = _get(f"{server}/api/games/{game['id']}")
    moves = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#moves li")]
    assert moves == final["moves"] and human_moves == sum(m == "red" for m in final["movers"])
    assert final["over"] and len(moves) <= PLAY_PLIES
    result = text(browser, "result")
    expected = "draw" if final["result"] == "draw" else f"{final['result']} wins"
    assert result.startswith(expected) and f"({final['end_reason']})" in result
    assert board_on_page(browser) == board_of(ce.GameState.from_dict(final["state"]))
    saved = [json.loads(line) for line in (workdir / "out" / "games.jsonl").read_text().splitlines()]
    assert saved[-1]["moves"] == moves and saved[-1]["agents"] == {"red": "human", "blue": "random"}
    screenshot(browser, workdir, "web_play.png")
    banner = browser.find_element(By.ID, "end-banner")  # the end, on the board, in words with its rule
    assert banner.text.startswith(expected) and "(R6.2" in banner.text and "final score" in text(browser, "facts")
    banner.click()  # put away, to see the final board
    wait(browser, lambda d: not d.find_elements(By.ID, "end-banner"), 10)
    written = sorted(str(p.relative_to(workdir)) for p in workdir.rglob("*") if p.is_file())
    assert [p for p in written if not p.startswith(("input/", "checkpoints/", "out/", "server.log", "web_"))] == []


# --- replay ------------------------------------------------------------------------------
def test_replay_of_a_recorded_game_stepped_to_the_end(browser, server, workdir, record, tmp_path):
    upload = write_records(tmp_path / "uploaded.jsonl", [greedy_record(seed=9, plies=30), record])
    browser.get(f"{server}/?tab=replay")
    wait(browser, lambda d: d.execute_script("return ui.replay !== null"), 60)
    browser.find_element(By.ID, "record-file").send_keys(str(upload))
    wait(browser, lambda d: "uploaded.jsonl" in d.find_element(By.ID, "record-select").text, 30)
    wait(browser, lambda d: d.execute_script("return ui.replay && ui.replay.name") == "uploaded.jsonl", 60)
    games = browser.find_elements(By.CSS_SELECTOR, "#game-select option")
    assert len(games) == 2
    games[1].click()
    n = len(record.actions)
    wait(browser, lambda d: text(d, "ply-text") == f"of {n}", 60)
    assert [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#moves li")] == record.moves
    browser.execute_script("document.activeElement.blur()")  # the arrows go to the page, not the game list
    body = browser.find_element(By.TAG_NAME, "body")
    states = record.replay()
    for ply in range(1, n + 1):
        body.send_keys(Keys.ARROW_RIGHT)
        if ply in (1, n // 2, n):  # the board follows the engine's replay, the last move is marked
            wait(browser, lambda d, p=str(ply): d.find_element(By.ID, "ply").get_attribute("value") == p, 10)
            assert board_on_page(browser) == board_of(states[ply])
            current = browser.find_element(By.CSS_SELECTOR, "#moves li.current")
            assert current.text == record.moves[ply - 1] and current.get_attribute("data-ply") == str(ply)
            marked = {c.get_attribute("data-cell") for c in browser.find_elements(By.CSS_SELECTOR, "rect.cell.last-cell")}
            src, _, rest = record.moves[ply - 1].partition("-")
            assert {src, rest.split(">")[0]} <= marked
    body.send_keys(Keys.ARROW_RIGHT)  # past the end: stays on the last ply
    assert browser.find_element(By.ID, "ply").get_attribute("value") == str(n)
    expected = "draw" if record.result == "draw" else f"{record.result} wins"
    assert text(browser, "result") == f"{expected} ({record.end_reason})"
    body.send_keys(Keys.ARROW_LEFT)
    wait(browser, lambda d: d.find_element(By.ID, "ply").get_attribute("value") == str(n - 1), 10)
    assert text(browser, "result") == "" and board_on_page(browser) == board_of(states[n - 1])
    body.send_keys(Keys.HOME)
    wait(browser, lambda d: board_on_page(d) == board_of(states[0]), 10)
    browser.find_elements(By.CSS_SELECTOR, "#moves li")[9].click()  # jump to ply 10
    wait(browser, lambda d: d.find_element(By.ID, "ply").get_attribute("value") == "10", 10)
    assert board_on_page(browser) == board_of(states[10])


def test_a_corrupt_record_is_an_error_on_the_page(browser, server, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "colony-game-record"}\n')
    browser.get(f"{server}/?tab=replay")
    wait(browser, lambda d: d.execute_script("return ui.replay !== null"), 60)
    browser.find_element(By.ID, "record-file").send_keys(str(bad))
    wait(browser, lambda d: "missing field(s)" in text(d, "message"), 30)
    assert text(browser, "message").startswith("bad.jsonl:1: record is missing field(s)")


# --- analysis ----------------------------------------------------------------------------
def test_analysis_view_of_the_shipped_checkpoint(browser, server, workdir, record):
    browser.get(f"{server}/?tab=replay")
    wait(browser, lambda d: d.execute_script("return ui.replay && ui.replay.name") == "greedy.jsonl", 60)
    states = record.replay()
    for ply in (GRACE_PLY, ANALYSED_PLY):
        browser.find_element(By.ID, "ply").clear()
        browser.find_element(By.ID, "ply").send_keys(str(ply), Keys.ENTER)
        wait(browser, lambda d, p=str(ply): d.find_element(By.ID, "ply").get_attribute("value") == p, 10)
        if ply == GRACE_PLY:
            assert "red finished; blue has 2 grace moves left" in text(browser, "facts")
            assert len(browser.find_elements(By.CSS_SELECTOR, "#facts .grace .bolt")) == states[ply].grace_left == 2
    analyser = browser.find_element(By.ID, "analyser")
    assert analyser.get_attribute("value") == "zero"  # the shipped zero network is offered first
    offered = [o.get_attribute("value") for o in browser.find_elements(By.CSS_SELECTOR, "#analyser-list option")]
    assert f"checkpoint:{SHIPPED}" in offered  # and the checkpoints found under checkpoints/
    analyser.clear()
    analyser.send_keys(f"checkpoint:{SHIPPED}")
    browser.find_element(By.ID, "analyse").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#top-moves tbody tr"), what="the analysis")
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#value-graph polyline"), what="the value graph")

    state = states[ply]
    api = _post(f"{server}/api/analyse", {"analyser": f"checkpoint:{SHIPPED}", "state": state.to_dict()})
    rows = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in browser.find_elements(By.CSS_SELECTOR, "#top-moves tbody tr")]
    assert [r[0] for r in rows] == [str(k) for k in range(1, len(rows) + 1)]
    assert [r[1].removeprefix("\u2605 ") for r in rows] == [m["notation"] for m in api["policy"]]
    assert rows[0][1] == f"\u2605 {api['best']}" == f"\u2605 {api['policy'][0]['notation']}"  # the best move, marked
    assert [r[2] for r in rows] == [f"{m['prob'] * 100:.1f}%" for m in api["policy"]]
    hints = browser.find_elements(By.CSS_SELECTOR, "line.hint.policy")
    assert [h.get_attribute("data-move") for h in hints] == [m["notation"] for m in api["policy"][:5]]
    red = api["value"] if api["to_move"] == "red" else -api["value"]
    assert text(browser, "value-text") == f"red {(red + 1) / 2 * 100:.0f}% \u00b7 blue {100 - (red + 1) / 2 * 100:.0f}%"
    assert "value = value head + \u03a6" in text(browser, "value-note")  # the shipped agent learned with shaping
    points = browser.find_element(By.CSS_SELECTOR, "#value-graph polyline").get_attribute("points").split()
    assert len(points) == len(record.actions) + 1  # one value per position of the game
    facts = text(browser, "facts")
    red_ctrl, blue_ctrl = ce.controlled_counts(state)
    assert "connections unlocked" in facts and f"colonies controlled: red {red_ctrl}, blue {blue_ctrl}" in facts
    colonies = browser.find_elements(By.CSS_SELECTOR, "g.colony-group")
    assert [c.get_attribute("data-controller") for c in colonies] == [
        str(c.controller) if c.controller is not None else "none" for c in ce.colonies(state)]
    screenshot(browser, workdir, "web_analysis_policy.png")


def test_watching_two_agents_play_each_other(browser, server):
    browser.get(f"{server}/?red=random&blue=greedy&seed=5&max-plies=6")
    wait(browser, lambda d: page_game(d) is not None, what="the new game")
    browser.execute_script("document.getElementById('speed').value = 0")  # no pause between moves
    wait(browser, lambda d: page_game(d)["over"], what="the agents' game")
    game = _get(f"{server}/api/games/{page_game(browser)['id']}")
    assert [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#moves li")] == game["moves"]
    assert len(game["moves"]) == 6 and game["end_reason"] == "ply_limit"
    state = ce.new_game(5, max_plies=6)
    for a in game["actions"]:
        state = ce.apply_action(state, a)
    assert board_on_page(browser) == board_of(state)
    assert browser.find_element(By.ID, "pause").get_attribute("disabled") == "true"  # nothing left to pause


# docs/rules.md R10: red's r4 on c4 may land on g4 (exactly 4 East), next to its colony, and push b1 away
R10_POSITION = """
. . . . . . . . . .
. . . . . . . . . .
. . . . . . . . . .
. . . . . . . . . .
. . . . . . r1 . . .
. . . . . r2 b3 . . .
. . r4 . . . b1 . . .
"""


def test_a_displacement_by_clicking_the_landing_cell_and_the_push(browser, server):
    from helpers import pos

    state = pos(R10_POSITION)
    game = _post(f"{server}/api/games", {"red": "human", "blue": "human", "state": state.to_dict()})
    browser.get(f"{server}/?game={game['id']}")
    wait(browser, ready_for_click, what="the set-up game")
    click_cell(browser, "c4")
    kinds = {t.get_attribute("data-cell"): t.get_attribute("data-kind")
             for t in browser.find_elements(By.CSS_SELECTOR, ".target")}
    assert kinds["g4"] == "displacement" and kinds["d4"] == "normal"
    click_cell(browser, "g4")
    pushes = {p.get_attribute("data-cell") for p in browser.find_elements(By.CSS_SELECTOR, ".target-push")}
    legal = {ce.action_to_str(int(a), state) for a in ce.legal_actions(state)}
    assert pushes == {m.split(">")[1] for m in legal if m.startswith("c4-g4>")}
    assert {"h3", "g2", "e4", "e6"} <= pushes and "f4" not in pushes  # R10's examples: allowed and not
    assert "click where the pushed satellite goes" in text(browser, "message")
    click_cell(browser, "h3")
    wait(browser, lambda d: page_game(d)["moves"] == ["c4-g4>h3"], 30)
    assert page_game(browser)["actions"] == [11174]  # the action id worked out in R10
    assert board_on_page(browser) == board_of(ce.apply_action(state, 11174))


# --- issue 33: the player's view -------------------------------------------------------------
ZERO_SEARCH = "zero:az:24"  # the shipped zero network's own search, small enough for CI


def test_zero_analysis_shows_ownership_and_a_principal_variation(browser, server, workdir, record):
    browser.set_window_size(1400, 1000)
    try:
        browser.get(f"{server}/?tab=replay&analyse=1&analyser={ZERO_SEARCH}")
        wait(browser, lambda d: d.execute_script("return ui.replay && ui.replay.name") == "greedy.jsonl", 60)
        browser.find_element(By.ID, "ply").clear()
        browser.find_element(By.ID, "ply").send_keys(str(ANALYSED_PLY), Keys.ENTER)
        wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#pv .pv-move")) >= 3, what="the principal variation")
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#value-graph polyline"), what="the value graph")
        owned = browser.execute_script("return [...document.querySelectorAll('rect.own')].map(e => e.getAttribute('class'))")
        assert owned and {c.split()[1] for c in owned} <= {"red", "blue"}
        a = browser.execute_script("return ui.analysis")
        assert len(a["ownership"]) == 100 and a["search"]["simulations"] == 24 and a["pv_source"].startswith("search")
        pv = browser.execute_script("return [...document.querySelectorAll('#pv .pv-move')].map(e => e.textContent)")
        assert pv == [f"{k + 1}. {m['notation']}" for k, m in enumerate(a["pv"])]
        state = record.replay()[ANALYSED_PLY]  # the line is legal move after move, from the shown position
        for m in a["pv"]:
            state = ce.apply_action(state, m["action"])
        rows = browser.execute_script("return [...document.querySelectorAll('#top-moves tbody tr')]"
                                      ".map(r => [r.className, ...[...r.cells].map(c => c.textContent)])")
        visits = [int(r[4] or 0) for r in rows]
        assert visits == sorted(visits, reverse=True)  # searched moves first, the most visited on top
        assert rows[0][0] == "best" and rows[0][2] == f"\u2605 {a['best']}" and a["best"] == a["pv"][0]["notation"]
        # read in one script call: the panel may be redrawn between a find and a read (a stale element)
        header = browser.execute_script("return document.querySelector('#top-moves th:last-child').innerText.trim()")
        assert header == f"{state_mover(record)} wins"
        centres = browser.execute_script("return [...document.querySelectorAll('g.hint-rank circle')]"
                                         ".map(c => [Number(c.getAttribute('cx')), Number(c.getAttribute('cy'))])")
        assert len(centres) >= 2
        assert all(np.hypot(x1 - x2, y1 - y2) >= 15 for i, (x1, y1) in enumerate(centres) for x2, y2 in centres[i + 1:])
        screenshot(browser, workdir, "web_analysis.png")
    finally:
        browser.set_window_size(1280, 900)


def state_mover(record: GameRecord) -> str:
    return str(record.replay()[ANALYSED_PLY].to_move)


def test_phone_width_shows_the_whole_board_without_sideways_scrolling(browser, server, workdir):
    browser.set_window_size(400, 900)
    try:
        browser.get(f"{server}/?red=human&blue=random&seed=3&max-plies=40")
        wait(browser, ready_for_click, what="the new game")
        width = browser.execute_script("return document.documentElement.clientWidth")
        assert browser.execute_script("return document.documentElement.scrollWidth") <= width
        board = browser.execute_script("const r = document.getElementById('board').getBoundingClientRect();"
                                       "return [r.left, r.right, r.width, r.height]")
        assert board[0] >= 0 and board[1] <= width and board[2] > 300 and abs(board[2] - board[3]) < 2
        header = browser.find_element(By.TAG_NAME, "header").size["height"]
        h1 = browser.find_element(By.CSS_SELECTOR, "header h1").size["height"]
        assert header < 3 * h1 + 20  # the title and tabs on one line, the status on the next
        click_cell(browser, "j1")  # the far corner can be clicked
        wait(browser, lambda d: text(d, "message") != "", 30)
        screenshot(browser, workdir, "web_phone.png")
    finally:
        browser.set_window_size(1280, 900)


def test_shipped_agents_are_offered_by_name(browser, server):
    browser.get(f"{server}/?red=human&blue=human&seed=1")
    wait(browser, ready_for_click, what="the new game")
    agents = [o.get_attribute("value") for o in browser.find_elements(By.CSS_SELECTOR, "#agent-list option")]
    analysers = [o.get_attribute("value") for o in browser.find_elements(By.CSS_SELECTOR, "#analyser-list option")]
    assert {"zero", "zero:az:200", "ppo", "mcts:200", "greedy", "random"} <= set(agents)
    assert {"zero", "zero:az:200", "ppo"} <= set(analysers) and analysers[0] == "zero"
    box = browser.find_element(By.ID, "analyser")  # a long spec fits its field
    box.clear()
    box.send_keys("checkpoint:checkpoints/colony_ppo.pt:mcts:200")
    assert browser.execute_script("const e = document.getElementById('analyser'); return e.scrollWidth <= e.clientWidth")


def test_arrows_on_the_game_menu_step_the_game(browser, server, record, tmp_path):
    two = write_records(tmp_path / "two.jsonl", [greedy_record(seed=9, plies=30), greedy_record(seed=10, plies=30)])
    browser.get(f"{server}/?tab=replay")
    wait(browser, lambda d: d.execute_script("return ui.replay !== null"), 60)
    browser.find_element(By.ID, "record-file").send_keys(str(two))
    wait(browser, lambda d: d.execute_script("return ui.replay && ui.replay.name") == "two.jsonl", 60)
    menu = browser.find_element(By.ID, "game-select")
    browser.execute_script("arguments[0].focus()", menu)
    menu.send_keys(Keys.ARROW_RIGHT)
    menu.send_keys(Keys.ARROW_RIGHT)
    wait(browser, lambda d: d.find_element(By.ID, "ply").get_attribute("value") == "2", 10)
    assert menu.get_attribute("value") == "0" and browser.execute_script("return ui.replay.index") == 0
    menu.send_keys(Keys.ARROW_LEFT)
    wait(browser, lambda d: d.find_element(By.ID, "ply").get_attribute("value") == "1", 10)
    browser.execute_script("document.getElementById('red').value = 'human'; document.getElementById('blue').value = 'human'")
    browser.find_element(By.ID, "branch").click()  # try a move from here: a new game from ply 1
    wait(browser, lambda d: d.execute_script("return ui.tab") == "play" and ready_for_click(d), 30, what="the branch")
    g = page_game(browser)
    assert g["state"] == browser.execute_script("return ui.replay.positions[1].state") and g["moves"] == []


def test_a_search_shows_its_progress_and_stop_plays_its_best_move_then_undo_clears_the_message(browser, server):
    browser.get(f"{server}/?red=human&blue=mcts:100000&seed=3&max-plies=40")  # its quick first pass: mcts:12500
    wait(browser, ready_for_click, what="the new game")
    click_cell(browser, first_cell(browser, "g.sat.movable"))
    click_cell(browser, first_cell(browser, ".target"))
    wait(browser, lambda d: "is thinking\u2026" in text(d, "status") and text(d, "status").endswith(" s"), 30,
         what="the search's elapsed time")
    wait(browser, lambda d: d.find_element(By.ID, "stop").is_enabled(), what="a move to stop with")
    best = text(browser, "status").split("best so far ")[1].split()[0]
    browser.find_element(By.ID, "stop").click()
    wait(browser, lambda d: len(page_game(d)["moves"]) == 2 and ready_for_click(d), 60, what="the stopped reply")
    assert page_game(browser)["moves"][1] == best and not browser.find_element(By.ID, "stop").is_enabled()
    click_cell(browser, "a8")  # seed 3: a blue satellite
    wait(browser, lambda d: "R4" in text(d, "message"), 30)
    browser.find_element(By.ID, "undo").click()
    wait(browser, lambda d: len(page_game(d)["moves"]) == 0, 30)
    assert text(browser, "message") == ""


def test_undo_while_the_agent_thinks_ends_its_search(browser, server):
    browser.get(f"{server}/?red=human&blue=mcts:400000&seed=4&max-plies=40")  # minutes of search
    wait(browser, ready_for_click, what="the new game")
    src = browser.execute_script("return document.querySelector('g.sat.movable').getAttribute('data-cell')")
    click_cell(browser, src)
    click_cell(browser, browser.execute_script("return document.querySelector('.target').getAttribute('data-cell')"))
    wait(browser, lambda d: "is thinking" in text(d, "status") and d.find_element(By.ID, "undo").is_enabled(), 30,
         what="Undo offered while the agent thinks")
    browser.find_element(By.ID, "undo").click()
    wait(browser, lambda d: page_game(d)["moves"] == [] and ready_for_click(d), 30, what="the undo")
    assert "is thinking" not in text(browser, "status") and page_game(browser)["legal"] is not None
