// A call never awaited: the run fails, and the call never reaches the host
// (test_cli.py checks the host's marker file is absent).
echo.f(1);
return 1;
