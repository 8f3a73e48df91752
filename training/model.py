"""Policy-value network and the masked action distribution.

The network reads the canonical observation (the mover's view, `colony_env.observation`) and
returns 16,001 policy logits laid out exactly as the action encoding (docs/rules.md R8):

    logits[0 .. 3199]      move planes:          32 per cell s  (index 32*s + 4*d + k-1)
    logits[3200 .. 15999]  displacement planes: 128 per cell s  (index 3200 + 128*s + 2*(8*d+pd) + pk-1)
    logits[16000]          pass

so a 1x1 convolution with 32 + 128 output planes over the 10x10 trunk, flattened cell-major,
*is* the policy head: every logit is computed at the cell of the satellite that acts
(`full_logits`). Training and play only ever need the logits of the legal actions, so
`forward` evaluates that 1x1 convolution at the legal actions' (cell, plane) pairs alone:
positions come with a padded list of candidate ids (`legal_slots`) and the distribution is
over those slots.

Masking (`MaskedCategorical`): 16,001 actions with usually fewer than 150 legal is where masked
PPO implementations produce NaNs (sb3-contrib issues #81, #247): `-inf` logits give
`0 * -inf = NaN` in the entropy and in gradients, and half precision overflows. Here the logits
are always cast to float32, clamped to +-LOGIT_BOUND, and illegal entries are replaced by the
finite MASKED_LOGIT, so every probability is finite, illegal ones are exactly 0, and the entropy
sums only over legal actions.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from colony_env import observation as _obs
from colony_env.constants import (
    BOARD_SIZE,
    CONNECTED_TO_END,
    DIRECTIONS,
    DISPLACEMENT_BASE,
    DISPLACEMENTS_PER_CELL,
    MAX_COMPONENT,
    MAX_STEP,
    MOVES_PER_CELL,
    N_ACTIONS,
    N_DIRECTIONS,
    PASS_ACTION,
)

LOGIT_BOUND = 1.0e4
"""Raw logits are clamped to +-this, so MASKED_LOGIT is always far below any legal logit."""
MASKED_LOGIT = -1.0e9
"""Finite stand-in for -inf (float32 holds it exactly enough; exp underflows to exactly 0)."""
POLICY_PLANES = MOVES_PER_CELL + DISPLACEMENTS_PER_CELL  # 160 planes per cell
CELLS = BOARD_SIZE * BOARD_SIZE
COUNT_FEATURES = 6
"""Board-wide numbers a `count_inputs` network reads beside the planes (`count_features`)."""


class ResidualBlock(nn.Module):
    """conv-relu-conv plus skip; the second conv starts at zero so a fresh block is the identity.

    With `global_pool`, KataGo's global pooling bias: the mean and the max of the first conv's
    activations over the whole board, through a linear layer, are added to every cell's channels
    before the second conv, so each block sees the board-wide picture (e.g. how many colonies each
    side controls, R7) and not only its 3x3 neighbourhood. It costs one [2C x C] product per
    position per block, next to two [9C x C] convolutions at each of the 100 cells.
    """

    def __init__(self, channels: int, global_pool: bool = False) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.pool_fc = nn.Linear(2 * channels, channels) if global_pool else None
        nn.init.zeros_(self.conv2.weight)
        nn.init.zeros_(self.conv2.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.conv1(x))
        if self.pool_fc is not None:
            pooled = torch.cat([h.mean(dim=(2, 3)), h.amax(dim=(2, 3))], dim=1)
            h = F.relu(h + self.pool_fc(pooled)[:, :, None, None])
        return F.relu(x + self.conv2(h))


class PolicyValueNet(nn.Module):
    """Residual conv trunk on the 10x10 board; policy planes per cell plus pass; a scalar value.

    The value is unbounded (no tanh) because with reward shaping it predicts V - Phi
    (training/ppo/shaping.py), which can leave [-1, 1].

    No batch norm on purpose: PPO evaluates the same samples at rollout and update time, and
    batch statistics would make the two disagree (the ratio would not start at 1).
    """

    def __init__(self, in_channels: int, channels: int = 32, blocks: int = 2, heuristic_prior: bool = False,
                 target_features: bool = False, ownership_head: bool = False, global_pool: bool = False,
                 count_inputs: bool = False) -> None:
        super().__init__()
        self.in_channels = in_channels
        self.channels = channels
        self.blocks = blocks
        self.heuristic_prior = heuristic_prior
        self.target_features = target_features
        self.ownership_head = ownership_head
        self.global_pool = global_pool
        # `count_features`: board-wide counts (connected satellites, colonies each side controls) as constant
        # input planes of the stem and as inputs of the value head. A 3x3 trunk cannot count the whole board,
        # and how many satellites are connected says how near the game's end is (R6.2.1).
        self.count_inputs = count_inputs
        # Whether the convolutions run in bfloat16 under autocast (the weights, the heads and every loss
        # stay float32): PPO's `precision` (training/config.py `resolve_precision`). Not part of the
        # architecture: a checkpoint holds float32 weights either way.
        self.bf16_trunk = False
        # Whether `body` is an int8 copy's (training/quantize.py): evaluation only, never trained or saved.
        self.int8_body = False
        # KataGo's ownership target, here: who controls the colony each cell ends the game in (R7.1), from the
        # mover's view. A dense auxiliary target (100 labels per position instead of one result) for the trunk;
        # play never reads it.
        self.ownership = nn.Conv2d(channels, 1, 1) if ownership_head else None
        # Per-plane projection of the trunk features at the action's TARGET cell (see `_target_cells`),
        # added to the source-cell logit: whether a move connects depends on where it lands, which the
        # source cell's receptive field (a few cells) often does not see. No bias: policy_planes has one.
        self.target_planes = nn.Conv2d(channels, POLICY_PLANES, 1, bias=False) if target_features else None
        # Weight of the per-action heuristic feature added to the logits (training/teacher.py).
        self.prior_weight = nn.Parameter(torch.ones(())) if heuristic_prior else None
        extra = COUNT_FEATURES if count_inputs else 0
        self.stem = nn.Conv2d(in_channels + extra, channels, 3, padding=1)
        self.trunk = nn.Sequential(*(ResidualBlock(channels, global_pool) for _ in range(blocks)))
        self.policy_conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.policy_planes = nn.Conv2d(channels, POLICY_PLANES, 1)
        self.pass_head = nn.Linear(channels, 1)
        self.value_conv = nn.Conv2d(channels, channels, 1)
        self.value_fc = nn.Linear(2 * channels + extra, channels)
        self.value_out = nn.Linear(channels, 1)
        # Small initial policy logits: a near-uniform start over the legal actions (CleanRL uses gain 0.01).
        nn.init.normal_(self.policy_planes.weight, std=0.01)
        nn.init.zeros_(self.policy_planes.bias)
        if self.target_planes is not None:
            nn.init.normal_(self.target_planes.weight, std=0.01)
        nn.init.normal_(self.pass_head.weight, std=0.01)
        nn.init.zeros_(self.pass_head.bias)
        nn.init.normal_(self.value_out.weight, std=0.01)
        nn.init.zeros_(self.value_out.bias)

    def _trunk(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self._trunk_features(obs)[:2]

    def _trunk_features(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        counts = count_features(obs) if self.count_inputs else None  # once: the stem and the value head read it
        if self.bf16_trunk:
            with torch.autocast(obs.device.type, dtype=torch.bfloat16):
                x, v, p = self._convolutions(obs, counts)
            x, v, p = x.float(), v.float(), p.float()
        else:
            x, v, p = self._convolutions(obs, counts)
        pooled = [v.mean(dim=(2, 3)), v.amax(dim=(2, 3))]
        if counts is not None:
            pooled.append(counts)
        v = torch.cat(pooled, dim=1)
        value = self.value_out(F.relu(self.value_fc(v))).squeeze(1)
        return p, value, x

    def body(self, obs: torch.Tensor) -> torch.Tensor:
        """The stem and the residual trunk: [B, C_in, 10, 10] -> [B, C, 10, 10] (an int8 copy replaces it)."""
        return self.trunk(F.relu(self.stem(obs)))

    def _convolutions(self, obs: torch.Tensor, counts: torch.Tensor | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(trunk output, value-conv features, policy-conv features): every convolution of the network."""
        x = self.body(self.stem_input(obs, counts))
        return x, F.relu(self.value_conv(x)), F.relu(self.policy_conv(x))

    def stem_input(self, obs: torch.Tensor, counts: torch.Tensor | None = None) -> torch.Tensor:
        """What the stem reads: the first `in_channels` planes, then the count planes (`count_inputs`;
        `counts` is `count_features(obs)` where the caller has it already)."""
        planes = obs[:, : self.in_channels]
        if not self.count_inputs:
            return planes
        counts = count_features(obs) if counts is None else counts
        return torch.cat([planes, counts[:, :, None, None].expand(-1, -1, BOARD_SIZE, BOARD_SIZE).to(planes.dtype)],
                         dim=1)

    def forward(self, obs: torch.Tensor, action_ids: torch.Tensor, action_features: torch.Tensor | None = None,
                with_ownership: bool = False, valid: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        """Logits of the given actions only, and the value.

        obs float[B, C, 10, 10], action_ids int64[B, L] (R8 ids; padding entries may hold any
        valid id) -> (logits float[B, L], value float[B]).

        Evaluating the 1x1 policy conv only at the (cell, plane) pairs of the legal actions
        gives the same numbers as `full_logits` at those ids, but costs O(L) instead of
        O(16001) per position; with ~70 legal actions out of 16,001 that is what makes
        CPU training fast. With `valid` (bool[B, L], `legal_slots`) only the valid entries are
        computed (the padding's logits are 0, to be masked by the caller), in one packed list:
        about 1.6 times fewer entries than the padded [B, L] in a PPO minibatch, and no
        [B, L, C] copies. `with_ownership` adds the ownership head's logits float[B, 100].
        """
        p, value, x = self._trunk_features(obs)
        ids = action_ids.long()
        logits = self._action_logits(p, obs, ids, valid)
        pass_logit = self.pass_head(p.mean(dim=(2, 3)))  # [B, 1]
        logits = torch.where(ids == PASS_ACTION, pass_logit.expand_as(logits), logits)
        if self.prior_weight is not None:
            if action_features is None:
                raise ValueError("this network adds a heuristic prior: pass action_features (teacher.greedy_action_features)")
            logits = logits + self.prior_weight * action_features
        if with_ownership:
            if self.ownership is None:
                raise ValueError("this network has no ownership head (ownership_head=False)")
            return logits, value, self.ownership(x).flatten(1)
        return logits, value

    def _action_logits(self, p: torch.Tensor, obs: torch.Tensor, ids: torch.Tensor,
                       valid: torch.Tensor | None) -> torch.Tensor:
        """float[B, L]: the policy planes' logit of each (non-pass, valid) action, 0 elsewhere.

        The entries are packed into one list of N actions: the trunk row of the acting cell
        (and of the landing cell with `target_features`) times the plane's weight row, summed.
        """
        b, c = p.shape[:2]
        width = ids.shape[1]
        feats = p.permute(0, 2, 3, 1).reshape(b * CELLS, c)  # row 100*i + s: position i's features at cell s
        keep = ids != PASS_ACTION
        if valid is not None:
            keep = keep & valid
        flat = keep.flatten().nonzero().squeeze(1)  # [N] entries of the [B, L] logits to compute
        a = ids.flatten()[flat]
        row = flat // width * CELLS
        dev = ids.device
        cell = ACTION_CELL.to(dev)[a]
        plane = ACTION_PLANE.to(dev)[a]
        weight = self.policy_planes.weight.reshape(POLICY_PLANES, c)
        dot = (feats.index_select(0, row + cell) * weight.index_select(0, plane)).sum(-1)
        dot = dot + self.policy_planes.bias.index_select(0, plane)
        if self.target_planes is not None:
            own_at_cell = _own_values(obs).flatten()[row + cell]
            target, on_board = _target_cells(a, cell, own_at_cell)
            t_weight = self.target_planes.weight.reshape(POLICY_PLANES, c)
            t_dot = (feats.index_select(0, row + target) * t_weight.index_select(0, plane)).sum(-1)
            dot = dot + t_dot * on_board
        return dot.new_zeros(b * width).index_add(0, flat, dot).reshape(b, width)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """The value head alone (no policy work), e.g. for bootstrapping."""
        return self._trunk(obs)[1]

    def full_logits(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """All 16,001 logits in the R8 layout (cell-major planes, then pass) and the value."""
        p, value = self._trunk(obs)
        b = obs.shape[0]
        planes = self.policy_planes(p).permute(0, 2, 3, 1)  # [B, 10, 10, 160]: cell-major like R8
        moves = planes[..., :MOVES_PER_CELL].reshape(b, -1)  # [B, 3200]
        displacements = planes[..., MOVES_PER_CELL:].reshape(b, -1)  # [B, 12800]
        if self.target_planes is not None:
            target = _shifted_target_planes(self.target_planes(p), _own_values(obs))
            moves = moves + target[..., :MOVES_PER_CELL].reshape(b, -1)
            displacements = displacements + target[..., MOVES_PER_CELL:].reshape(b, -1)
        pass_logit = self.pass_head(p.mean(dim=(2, 3)))
        return torch.cat([moves, displacements, pass_logit], dim=1), value

    def architecture(self) -> dict[str, int]:
        """What is needed to rebuild this network (stored in checkpoints)."""
        return {"in_channels": self.in_channels, "channels": self.channels, "blocks": self.blocks,
                "heuristic_prior": int(self.heuristic_prior), "target_features": int(self.target_features),
                "ownership_head": int(self.ownership_head), "global_pool": int(self.global_pool),
                "count_inputs": int(self.count_inputs)}

    @classmethod
    def from_architecture(cls, arch: dict[str, int]) -> "PolicyValueNet":
        """A fresh network of the architecture `architecture()` returned (flags absent = off, as in older files)."""
        return cls(int(arch["in_channels"]), int(arch["channels"]), int(arch["blocks"]),
                   **{flag: bool(arch.get(flag, 0)) for flag in ARCHITECTURE_FLAGS})

    def blank_copy(self) -> "PolicyValueNet":
        """A new network of the same architecture and precision (fresh weights), e.g. for a pool opponent."""
        copy = PolicyValueNet.from_architecture(self.architecture())
        copy.bf16_trunk = self.bf16_trunk
        return copy


ARCHITECTURE_FLAGS = ("heuristic_prior", "target_features", "ownership_head", "global_pool", "count_inputs")
"""PolicyValueNet's on/off parts, as stored in a checkpoint's `architecture` (0 or 1 each)."""


def count_features(obs: torch.Tensor) -> torch.Tensor:
    """float[B, COUNT_FEATURES] from the observation planes (`colony_env.observation`): connected satellites of
    both colours / 23 (R6.2.1), whether 20, 21 and 22 or more are connected (one connection more can end the
    game), and the colonies the observer and the opponent control / 4 (R7.1; each colony cell adds 1 / its
    component's size)."""
    connected = obs[:, _obs.P_OWN_CONNECTED].sum(dim=(1, 2)) + obs[:, _obs.P_OPP_CONNECTED].sum(dim=(1, 2))
    size = obs[:, _obs.P_COMPONENT_SIZE] * float(MAX_COMPONENT)  # the plane holds size / MAX_COMPONENT
    per_cell = torch.where(size > 0, 1.0 / size.clamp(min=1.0), torch.zeros_like(size))
    own = (obs[:, _obs.P_OWN_CONTROLS] * per_cell).sum(dim=(1, 2))
    opp = (obs[:, _obs.P_OPP_CONTROLS] * per_cell).sum(dim=(1, 2))
    near = [(connected >= CONNECTED_TO_END - k).to(obs.dtype) for k in (3, 2, 1)]
    return torch.stack([connected / CONNECTED_TO_END, *near, own / 4.0, opp / 4.0], dim=1)


def with_count_inputs(model: PolicyValueNet) -> PolicyValueNet:
    """A copy of `model` with `count_inputs` on that computes exactly what `model` computes: the new stem and
    value-head weights start at 0, so training decides how much the counts matter."""
    if model.count_inputs:
        raise ValueError("this network already reads the counts (count_inputs)")
    arch = {**model.architecture(), "count_inputs": 1}
    copy = PolicyValueNet.from_architecture(arch)
    state = model.state_dict()
    with torch.no_grad():
        for name, tensor in copy.state_dict().items():
            old = state[name]
            tensor.zero_()
            tensor[tuple(slice(0, d) for d in old.shape)] = old
    return copy


assert BOARD_SIZE * BOARD_SIZE * POLICY_PLANES + 1 == N_ACTIONS  # the head covers R8 exactly


def _action_tables() -> tuple[torch.Tensor, torch.Tensor]:
    """ACTION_CELL[a], ACTION_PLANE[a]: where action a's logit lives in the policy planes (R8)."""
    a = torch.arange(N_ACTIONS)
    is_move = a < DISPLACEMENT_BASE
    d = a - DISPLACEMENT_BASE
    cell = torch.where(is_move, a // MOVES_PER_CELL, d // DISPLACEMENTS_PER_CELL)
    plane = torch.where(is_move, a % MOVES_PER_CELL, MOVES_PER_CELL + d % DISPLACEMENTS_PER_CELL)
    cell[PASS_ACTION] = 0  # pass has its own head; any valid index will do here
    plane[PASS_ACTION] = 0
    return cell, plane


ACTION_CELL, ACTION_PLANE = _action_tables()


def _move_geometry() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """ACTION_DR[a], ACTION_DC[a]: direction of the mover (R1.4); ACTION_STEPS[a]: k for a move, 0 for a
    displacement (its distance is the mover's value, R4, known only from the position) and for pass."""
    a = torch.arange(N_ACTIONS)
    is_move = a < DISPLACEMENT_BASE
    plane = ACTION_PLANE
    d = torch.where(is_move, plane // MAX_STEP, (plane - MOVES_PER_CELL) // (DISPLACEMENTS_PER_CELL // N_DIRECTIONS))
    dirs = torch.tensor(DIRECTIONS)
    steps = torch.where(is_move, plane % MAX_STEP + 1, torch.zeros_like(a))
    steps[PASS_ACTION] = 0
    return dirs[d, 0], dirs[d, 1], steps


ACTION_DR, ACTION_DC, ACTION_STEPS = _move_geometry()
N_VALUES = 4  # satellite values 1..4; observation planes 0..3 are the mover's own satellites of each value


def _own_values(obs: torch.Tensor) -> torch.Tensor:
    """int64[B, 100]: value of the mover's satellite on each cell (0 if none), from planes 0..3."""
    v = torch.arange(1, N_VALUES + 1, dtype=obs.dtype, device=obs.device)
    return (obs[:, :N_VALUES] * v[None, :, None, None]).sum(1).round().long().reshape(obs.shape[0], -1)


def _target_cells(ids: torch.Tensor, cell: torch.Tensor, own_at_cell: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(target cell int64, on_board bool) of each action id: where the acting satellite lands.

    `ids` hold no pass (the pass logit has its own head); `cell` is each action's cell
    (ACTION_CELL) and `own_at_cell` the mover's value there (0 if none, `_own_values`), all of one
    shape. Move (s, d, k): s + k*d. Displacement (s, d, pd, pk): s + v*d with v the mover's value
    at s, the landing cell X of R4; the pushed satellite's cell Y is not used. Off-board cells and
    displacements from an empty cell get on_board False (such actions are never legal; their
    target term is 0, matching `full_logits`).
    """
    dev = ids.device
    steps = ACTION_STEPS.to(dev)[ids]
    dist = torch.where(steps > 0, steps, own_at_cell)
    r = cell // BOARD_SIZE + dist * ACTION_DR.to(dev)[ids]
    c = cell % BOARD_SIZE + dist * ACTION_DC.to(dev)[ids]
    on_board = (dist > 0) & (r >= 0) & (r < BOARD_SIZE) & (c >= 0) & (c < BOARD_SIZE)
    target = torch.where(on_board, r * BOARD_SIZE + c, torch.zeros_like(cell))
    return target, on_board


def _shift(x: torch.Tensor, dr: int, dc: int) -> torch.Tensor:
    """y[..., r, c] = x[..., r + dr, c + dc], 0 where that is off the board."""
    m = MAX_STEP  # the longest shift of a move or a landing
    pad = F.pad(x, (m, m, m, m))
    return pad[..., m + dr: m + dr + BOARD_SIZE, m + dc: m + dc + BOARD_SIZE]


def _shifted_target_planes(tproj: torch.Tensor, own_values: torch.Tensor) -> torch.Tensor:
    """Full-board form of the target term: [B, 10, 10, 160], plane q at cell s read at q's target of s.

    The reference for `forward`'s gather (tests compare the two): built by shifting whole planes,
    not by the per-action tables.
    """
    b = tproj.shape[0]
    vals = own_values.reshape(b, BOARD_SIZE, BOARD_SIZE)
    out = torch.zeros_like(tproj)
    for q in range(POLICY_PLANES):
        if q < MOVES_PER_CELL:
            dr, dc = DIRECTIONS[q // MAX_STEP]
            k = q % MAX_STEP + 1
            out[:, q] = _shift(tproj[:, q], k * dr, k * dc)
        else:
            dr, dc = DIRECTIONS[(q - MOVES_PER_CELL) // (DISPLACEMENTS_PER_CELL // N_DIRECTIONS)]
            for v in range(1, N_VALUES + 1):
                out[:, q] += (vals == v) * _shift(tproj[:, q], v * dr, v * dc)
    return out.permute(0, 2, 3, 1)


def masked_log_probs(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log-softmax over the legal actions only; illegal entries get a huge negative finite log-prob."""
    safe = logits.float().clamp(-LOGIT_BOUND, LOGIT_BOUND)
    safe = torch.where(mask, safe, torch.full_like(safe, MASKED_LOGIT))
    return torch.log_softmax(safe, dim=-1)


def legal_slots(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """bool[N, 16001] action masks -> (ids int64[N, L], valid bool[N, L]), L the largest legal count.

    Row i lists its legal ids in increasing order, padded with id 0 (marked invalid).
    """
    mask = np.asarray(mask, bool)
    counts = mask.sum(axis=1)
    width = max(1, int(counts.max(initial=0)))
    rows, cols = np.nonzero(mask)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pos = np.arange(len(rows)) - np.repeat(starts, counts)
    ids = np.zeros((mask.shape[0], width), np.int64)
    ids[rows, pos] = cols
    valid = np.arange(width)[None, :] < counts[:, None]
    return ids, valid


class MaskedCategorical:
    """A categorical distribution restricted to the legal entries of each row (never NaN).

    Rows are either the full 16,001 actions with the legal mask, or the candidate slots of
    `legal_slots` with their `valid` flags; sampled values index the row's entries.
    """

    def __init__(self, logits: torch.Tensor, mask: torch.Tensor) -> None:
        if mask.shape != logits.shape or mask.dtype != torch.bool:
            raise ValueError(f"mask must be bool with the logits' shape {tuple(logits.shape)}, got {mask.dtype}{tuple(mask.shape)}")
        if not bool(mask.any(dim=-1).all()):
            raise ValueError("every row of the action mask needs at least one legal action (a finished game has none)")
        self.mask = mask
        self.log_probs = masked_log_probs(logits, mask)
        self.probs = self.log_probs.exp()  # exactly 0 for illegal actions

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self.log_probs.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        # Sum over legal actions only: for illegal ones p == 0 and log p is -1e9, and excluding them
        # keeps the gradient free of 0 * huge products.
        plogp = torch.where(self.mask, self.probs * self.log_probs, torch.zeros_like(self.probs))
        return -plogp.sum(dim=-1)

    def sample(self, generator: torch.Generator | None = None) -> torch.Tensor:
        return torch.multinomial(self.probs, 1, generator=generator).squeeze(-1)

    def mode(self) -> torch.Tensor:
        return self.log_probs.argmax(dim=-1)
