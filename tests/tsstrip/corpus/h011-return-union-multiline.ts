function f(x: number):
    | { ok: true; v: number }
    | { ok: false } {
    return x > 0 ? { ok: true, v: x } : { ok: false }
}
return [f(1), f(-1)]
