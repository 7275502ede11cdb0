import { type A, type B as C } from "./types";
return 2
