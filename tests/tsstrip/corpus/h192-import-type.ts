import type { A, B } from "./types";
import type D from "./d";
import type * as NS from "./ns";
return 1
