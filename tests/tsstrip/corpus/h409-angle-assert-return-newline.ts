// @refuse: type assertion needs its operand on the same line
function f(v: unknown) { return <number>
    v }
return f(3)
