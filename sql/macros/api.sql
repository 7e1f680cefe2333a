-- api: macros for the host API rules several marts share, so each is written once.
--
-- is_kernel_launch(api_name)
--   true for a runtime API that launches a kernel: its name contains KernelLaunch or
--   LaunchKernel, in any case (rtKernelLaunch, CpuKernelLaunch, KernelLaunchWithHandle,
--   aclrtLaunchKernel, ...). The top-down Runtime row spans these calls
--   (docs/formats.md#rule-topdown) and the advice mart's launch_bound rule compares their span
--   with the tasks' (docs/formats.md#rule-advice).

create or replace macro is_kernel_launch(api_name) as
    lower(api_name) like '%kernellaunch%' or lower(api_name) like '%launchkernel%';
