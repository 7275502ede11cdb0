type U =
    | "a"
    | "b";
type I = & { a: 1 } & { b: 2 };
return "u"
