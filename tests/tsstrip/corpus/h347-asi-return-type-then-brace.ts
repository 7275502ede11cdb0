function f(): number
{ return 1 }
return f()
