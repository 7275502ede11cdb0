// Numbers in [1e20, 1e21) cross with their exact shortest digits. (Built from an exponent
// literal: QuickJS 2021-03-27 parses some long integer literals to a neighbouring double.)
return [1.2345678901234568e20, 1.2345678901234567e20, 9.999999999999999e20];
