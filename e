timeout: failed to run command ‘./volley’: No such file or directory
