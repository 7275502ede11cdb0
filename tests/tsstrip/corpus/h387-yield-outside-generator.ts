function f() { const yield_ = 1; return yield_ } return f()
