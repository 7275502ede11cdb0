let fn: (this: Window) => void = function () {}; return typeof fn
