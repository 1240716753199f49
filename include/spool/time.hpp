// spool's timers: sleep, sleep_until, timeout, interval, and the clock (pause / advance).
#pragma once

#include "spool/time/clock.hpp"
#include "spool/time/delay_queue.hpp"
#include "spool/time/interval.hpp"
#include "spool/time/sleep.hpp"
#include "spool/time/timeout.hpp"
