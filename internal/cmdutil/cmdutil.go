package cmdutil
