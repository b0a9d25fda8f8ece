# SPDX-License-Identifier: MIT
"""torch.optim.Optimizer subclasses over the extension's hpu::fused_* ops (csrc/ops_foreach.cpp).

Each param group keeps its learning rate in a 0-dim float32 tensor on its device, written by
a device fill (hpu::fused_set_lr) whenever ``group['lr']`` is assigned (what LR schedulers do),
and its step count in another (``state[p]['step']`` of its params, advanced by the kernels).
The step reads both on the device: a step's launches do not change with the schedule.
"""
import torch
from torch.optim.optimizer import required

from ... import _C  # noqa: F401  registers the hpu:: ops


class _Group(dict):
    """A param group whose 'lr' lives on the device too (``lr_tensor``), and its step count."""

    def __init__(self, group):
        super().__init__(group)
        params = self["params"]
        devices = {p.device for p in params}
        if len(devices) != 1 or next(iter(devices)).type != "hpu":
            raise ValueError(f"a fused optimizer's param group must be on one hpu device, "
                             f"not on {sorted(map(str, devices))}")
        device = params[0].device
        self.lr_tensor = torch.empty((), dtype=torch.float32, device=device)
        self.step_tensor = torch.zeros((), dtype=torch.float32, device=device)
        torch.ops.hpu.fused_set_lr(self.lr_tensor, float(self["lr"]))

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        if key == "lr":
            torch.ops.hpu.fused_set_lr(self.lr_tensor, float(value))


class _Fused(torch.optim.Optimizer):
    """Steps each group's params that have a gradient with one hpu:: op (``_step_group``)."""

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        self.param_groups[-1] = _Group(self.param_groups[-1])

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        # PyTorch rebuilt the groups as plain dicts, and gave each param its own step.
        self.param_groups = [_Group(g) for g in self.param_groups]
        for group in self.param_groups:
            for p in group["params"]:
                step = self.state[p].get("step")
                if step is not None:
                    group.step_tensor.copy_(step)
                    break
            self._share_step(group)

    def _share_step(self, group):
        for p in group["params"]:
            if p in self.state and self.state[p]:
                self.state[p]["step"] = group.step_tensor

    def _state(self, group, p, names, like):
        """p's state tensors of these names, made as ``like(p)`` on first use."""
        state = self.state[p]
        for name in names:
            if name not in state:
                state[name] = like(p)
        state["step"] = group.step_tensor
        return [state[name] for name in names]

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                self._step_group(group, params, [p.grad for p in params])
        return loss


def _zeros(p):
    return torch.zeros_like(p, memory_format=torch.preserve_format)


def _check(ok, what, value):
    if not ok:
        raise ValueError(f"Invalid {what}: {value}")


def _check_lr_wd(lr, weight_decay):
    _check(lr >= 0.0, "learning rate", lr)
    _check(weight_decay >= 0.0, "weight_decay value", weight_decay)


def _check_betas(betas, eps):
    _check(eps >= 0.0, "epsilon value", eps)
    _check(0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0])
    _check(0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1])


class FusedSGD(_Fused):
    """torch.optim.SGD (momentum, dampening, weight decay, Nesterov) as one op a group."""

    def __init__(self, params, lr=required, momentum=0, dampening=0,
                 weight_decay=0, nesterov=False):
        if lr is required:
            raise ValueError("FusedSGD needs a learning rate (lr)")
        _check_lr_wd(lr, weight_decay)
        _check(momentum >= 0.0, "momentum value", momentum)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov))

    def _step_group(self, group, params, grads):
        momentum = group["momentum"]
        names = ["momentum_buffer"] if momentum != 0 else []
        bufs = [b for p in params for b in self._state(group, p, names, _zeros)]
        torch.ops.hpu.fused_sgd(params, grads, bufs, group.lr_tensor, group.step_tensor,
                                float(momentum), float(group["dampening"]),
                                float(group["weight_decay"]), bool(group["nesterov"]))


class _AdamLike(_Fused):
    """AdamW and LAMB: both moments per param, an op of the same arguments (and _flags())."""

    def _step_group(self, group, params, grads):
        state = [self._state(group, p, ["exp_avg", "exp_avg_sq"], _zeros) for p in params]
        beta1, beta2 = group["betas"]
        self._op(params, grads, [s[0] for s in state], [s[1] for s in state], group.lr_tensor,
                 group.step_tensor, float(beta1), float(beta2), float(group["eps"]),
                 float(group["weight_decay"]), *self._flags(group))


class FusedAdamW(_AdamLike):
    """torch.optim.AdamW (without amsgrad) as one op a group."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False):
        _check_lr_wd(lr, weight_decay)
        _check_betas(betas, eps)
        if amsgrad:
            raise ValueError("FusedAdamW does not implement amsgrad")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=False))

    _op = torch.ops.hpu.fused_adamw

    def _flags(self, group):
        return ()


class FusedLamb(_AdamLike):
    """LAMB: AdamW's moments, the update u = m^ / (sqrt(v^) + eps) + weight_decay * p, and
    p -= lr * (||p|| / ||u||) * u per param (the trust ratio; 1 if either norm is 0).
    Gradients are not clipped: use FusedClipNorm first."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01,
                 bias_correction=True, grad_averaging=True):
        _check_lr_wd(lr, weight_decay)
        _check_betas(betas, eps)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      bias_correction=bias_correction,
                                      grad_averaging=grad_averaging))

    _op = torch.ops.hpu.fused_lamb

    def _flags(self, group):
        return bool(group["bias_correction"]), bool(group["grad_averaging"])


class FusedAdadelta(_Fused):
    """torch.optim.Adadelta as one op a group."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0):
        _check_lr_wd(lr, weight_decay)
        _check(0.0 <= rho <= 1.0, "rho value", rho)
        _check(eps >= 0.0, "epsilon value", eps)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay))

    def _step_group(self, group, params, grads):
        state = [self._state(group, p, ["square_avg", "acc_delta"], _zeros) for p in params]
        torch.ops.hpu.fused_adadelta(params, grads, [s[0] for s in state],
                                     [s[1] for s in state], group.lr_tensor, group.step_tensor,
                                     float(group["rho"]), float(group["eps"]),
                                     float(group["weight_decay"]))
