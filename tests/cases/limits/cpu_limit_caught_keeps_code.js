try { for (;;) {} } catch (e) {}
return "escaped";
