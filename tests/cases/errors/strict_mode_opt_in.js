"use strict";
try { undeclared = 1; return "sloppy"; } catch (e) { return e.name; }
