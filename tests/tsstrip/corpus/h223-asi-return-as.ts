function f() {
    return 5 as number
}
return f()
