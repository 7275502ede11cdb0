function f(): any {
    return 1 as number
}
return f()
