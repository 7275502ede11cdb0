import type fs = require("fs");
return 5
